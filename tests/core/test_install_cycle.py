"""Uninstalling a plugin distribution removes its scorers; installing it again brings them back.

This changes the test environment for a few seconds (pip uninstall / install of
evalyard-lexicon), so it always reinstalls, even when an assertion fails.
"""

from __future__ import annotations

import json
import subprocess
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest

from testutil import ROOT

# The uninstall is seen by every process sharing the environment: never beside other tests.
pytestmark = pytest.mark.serial

LEXICON = {"exact_match", "word_count_match", "readability", "specificity"}


def _scorers(exe, env):
    out = subprocess.run([exe, "scorers", "--json"], env=env, capture_output=True, text=True, check=True)
    return {s["name"]: s["plugin"] for s in json.loads(out.stdout)}


def test_uninstall_and_reinstall_lexicon(evalyard_exe, cli_env):
    try:
        distribution("evalyard-lexicon")
    except PackageNotFoundError:
        pytest.skip("evalyard-lexicon is not installed in this environment")
    env = {k: v for k, v in cli_env.items() if k not in ("EVALYARD_EXTRA_PLUGINS", "EVALYARD_LOAD_PLUGINS")}
    assert {_scorers(evalyard_exe, env).get(name) for name in LEXICON} == {"lexicon"}
    try:
        gone = subprocess.run([evalyard_exe, "uninstall", "evalyard-lexicon", "--yes"], env=env, capture_output=True,
                              text=True)
        assert gone.returncode == 0, gone.stderr
        after = _scorers(evalyard_exe, env)
        assert LEXICON.isdisjoint(after) and "contains" in after
    finally:
        back = subprocess.run([evalyard_exe, "install", "-e", str(Path(ROOT) / "plugins" / "lexicon"), "--no-deps",
                               "--no-build-isolation", "--quiet"], env=env, capture_output=True, text=True)
    assert back.returncode == 0, back.stderr
    assert {_scorers(evalyard_exe, env).get(name) for name in LEXICON} == {"lexicon"}
