"""Start-up stays cheap: the CLI and plugin loading import no heavy library."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ["torch", "transformers", "litellm", "llama_cpp", "bert_score", "nltk", "sqlalchemy", "sqlmodel", "alembic",
         "numpy", "RestrictedPython", "opentelemetry"]


def test_cli_import_and_scorer_listing_stay_light():
    code = (
        "import sys, json\n"
        "from evalyard.cli import cli\n"
        "from evalyard import Application\n"
        "names = sorted(e.name for e in Application().registry.scorers)\n"
        f"print(json.dumps({{'names': names, 'heavy': [m for m in {HEAVY!r} if m in sys.modules]}}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    assert "contains" in data["names"]
    assert data["heavy"] == []


def test_a_plugins_non_daemon_thread_finishes_its_work_at_exit(cli_env, evalyard_exe, tmp_path):
    """Model clients flush logs and usage from background threads: the CLI exits through the
    interpreter's normal shutdown, which waits for non-daemon threads (no os._exit)."""
    marker = tmp_path / "flushed.txt"
    plugin = tmp_path / "threaded_plugin.py"
    plugin.write_text(
        "import threading, time\n"
        "from evalyard import hookimpl, Scorer, Score\n"
        "class Slow(Scorer):\n"
        "    name = 'slow_flush'\n"
        "    def score(self, case):\n"
        "        def flush():\n"
        "            time.sleep(0.3)\n"
        f"            open({str(marker)!r}, 'a').write(case.id + '\\n')\n"
        "        threading.Thread(target=flush, daemon=False).start()\n"
        "        return Score(value=1.0)\n"
        "@hookimpl\n"
        "def register_scorers(register):\n"
        "    register(Slow)\n"
    )
    data = tmp_path / "c.jsonl"
    data.write_text('{"id": "a", "candidate": "x"}\n{"id": "b", "candidate": "y"}\n')
    out = subprocess.run([evalyard_exe, "run", str(data), "-s", "slow_flush"],
                         env=dict(cli_env, EVALYARD_EXTRA_PLUGINS=str(plugin)), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert sorted(marker.read_text().split()) == ["a", "b"]
