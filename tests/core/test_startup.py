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


def test_a_cached_rerun_of_a_judged_suite_never_imports_litellm(cli_env, evalyard_exe, tmp_path):
    """litellm is imported where a model is called: a rerun whose every judge call the response
    cache answers pays nothing for it (its import alone takes seconds)."""
    rules = tmp_path / "judge.jsonl"
    rules.write_text(json.dumps({"content": "yes"}) + "\n")
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "reference": "r", "candidate": f"a{i}"})
                            + "\n" for i in range(5)))
    command = [evalyard_exe, "run", str(data), "-s", "criteria/correctness", "--judge-model", f"scripted/{rules}", "--json"]
    env = {**cli_env, "EVALYARD_LOAD_PLUGINS": "judge,criteria"}
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["usage"]["cache_hits"] == 0
    again = subprocess.run(command, env={**env, "PYTHONPROFILEIMPORTTIME": "1"}, capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["usage"]["cache_hits"] == 5
    imported = {line.rsplit("|", 1)[-1].strip() for line in again.stderr.splitlines() if line.startswith("import time:")}
    assert "sqlalchemy" in imported  # the import log is read
    assert "litellm" not in imported
