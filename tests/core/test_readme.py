"""The README stays true: its set-up commands exist and every command of its tour is a real command."""

from __future__ import annotations

import re

from click.testing import CliRunner

from evalyard.cli import cli
from testutil import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_opens_with_what_evalyard_is_then_the_two_setup_commands():
    opening, first_block, after = README.split("```", 2)
    assert "evalyard evaluates LLM outputs" in opening
    assert "downloads" not in opening and "installs" not in opening  # what make demo fetches comes after
    assert "make demo` scores" in after
    assert "make demo" in first_block and "make test" in first_block
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)


def test_every_command_in_the_tour_exists(installed_plugins):
    commands = set(re.findall(r"^\$ evalyard ([a-z]+(?: [a-z]+)?)", README, re.M))
    assert len(commands) >= 8
    for command in sorted(commands):
        words = command.split()
        result = CliRunner().invoke(cli, words + ["--help"])
        if result.exit_code != 0 and len(words) == 2:  # "run examples" style: the second word is an argument
            result = CliRunner().invoke(cli, words[:1] + ["--help"])
        assert result.exit_code == 0, f"README mentions `evalyard {command}`, which does not exist"


def test_readme_hooks_are_the_hookspecs():
    """Every hook is documented with its exact name and argument list, and nothing else is (as datasette checks)."""
    import inspect

    from evalyard import hookspecs

    documented = dict(re.findall(r"^\| `([a-z_]+)\(([a-z_, ]*)\)` \|", README, re.M))
    specs = {
        name: ", ".join(inspect.signature(function).parameters)
        for name, function in vars(hookspecs).items()
        if callable(function) and hasattr(function, "evalyard_spec")
    }
    assert specs and documented == specs


def test_readme_python_api_example_runs(tmp_path, monkeypatch, installed_plugins):
    """The README's Python API example, run as written (in a scratch directory)."""
    block = README.split("### Python API", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    namespace: dict = {}
    exec(compile(block, "README.md (Python API)", "exec"), namespace)
    run = namespace["run"]
    assert run.status == "completed" and run.summary["exact_match"]["count"] == 20
    assert {r["scorer"] for r in run.results} == {"exact_match", "word_count_match"}
