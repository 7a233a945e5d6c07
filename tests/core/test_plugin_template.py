"""`evalyard plugin new` renders a plugin that installs, registers through its entry point, and passes its tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from click.testing import CliRunner

from evalyard.cli import cli


def test_rendered_plugin_installs_and_passes_its_own_tests(tmp_path, cli_env, evalyard_exe):
    project = tmp_path / "evalyard-word-overlap"
    result = CliRunner().invoke(cli, ["plugin", "new", "word_overlap", "-d", str(project)])
    assert result.exit_code == 0, result.output
    assert {p.relative_to(project).as_posix() for p in project.rglob("*") if p.is_file()} == {
        "pyproject.toml", "README.md", "evalyard_word_overlap/__init__.py", "evalyard_word_overlap/plugin.py",
        "tests/test_plugin.py"}

    site = tmp_path / "site"  # install beside the venv, not into it
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(site), str(project)], check=True, capture_output=True)
    env = dict(cli_env, PYTHONPATH=os.pathsep.join([str(site), cli_env["PYTHONPATH"]]),
               EVALYARD_LOAD_PLUGINS="word_overlap")
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(project / "tests")],
                           env=env, capture_output=True, text=True, cwd=tmp_path)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "3 passed" in tests.stdout
    listed = subprocess.run([evalyard_exe, "scorers", "--json"], env=env, capture_output=True, text=True, check=True)
    plugin_of = {s["name"]: s["plugin"] for s in json.loads(listed.stdout)}
    assert plugin_of["word_overlap"] == "word_overlap"


def test_refuses_bad_names_and_non_empty_directories(tmp_path):
    bad = CliRunner().invoke(cli, ["plugin", "new", "Bad-Name", "-d", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "lowercase" in bad.output
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    taken = CliRunner().invoke(cli, ["plugin", "new", "ok", "-d", str(tmp_path / "full")])
    assert taken.exit_code == 2 and "not empty" in taken.output
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"
