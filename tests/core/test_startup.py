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


# The console script turns the cyclic collector off during start-up (console.py); every
# command must get it back before its real work: at once, or when it opens the database.
_GC_PROBE = (
    "import atexit, gc, sys\n"
    "atexit.register(lambda: print('gc', gc.isenabled(), gc.get_freeze_count() > 0, file=sys.stderr))\n"
    "sys.argv = ['evalyard'] + sys.argv[1:]\n"
    "from evalyard.console import main\n"
    "main()\n"
)


def _gc_state_at_exit(*args: str) -> str:
    out = subprocess.run([sys.executable, "-c", _GC_PROBE, *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return [line for line in out.stderr.splitlines() if line.startswith("gc ")][-1]


def test_console_script_restores_collection_for_commands_without_a_database():
    assert _gc_state_at_exit("scorers", "--json") == "gc True True"


def test_console_script_restores_collection_once_the_database_is_open(tmp_path):
    assert _gc_state_at_exit("runs", "list", "--json", "--db", str(tmp_path / "e.db")) == "gc True True"
