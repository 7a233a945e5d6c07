"""Start-up stays cheap: the CLI and plugin loading import no heavy library."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ["torch", "transformers", "litellm", "llama_cpp", "bert_score", "nltk", "sqlalchemy", "sqlmodel", "alembic",
         "numpy", "RestrictedPython"]


def test_cli_import_and_scorer_listing_stay_light():
    code = (
        "import sys, json\n"
        "from evalyard.cli import cli\n"
        "from evalyard.registry import get_registry\n"
        "names = sorted(get_registry().scorers)\n"
        f"print(json.dumps({{'names': names, 'heavy': [m for m in {HEAVY!r} if m in sys.modules]}}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    assert "contains" in data["names"]
    assert data["heavy"] == []
