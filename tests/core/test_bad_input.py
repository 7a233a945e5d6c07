"""Bad input: one line naming file, line and field; exit code 2; nothing written."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from testutil import write
from evalyard.cli import cli


APP = None


def run_cli(*args):
    return CliRunner().invoke(cli, list(args), obj=APP, catch_exceptions=False)


@pytest.fixture(autouse=True)
def _this_tests_app(app):
    """The CLI calls below run against this test's application (with its plugins)."""
    global APP
    APP = app


def assert_one_line_error(result, *fragments, home=None):
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    if home is not None:
        # Nothing written: the database is not even created on bad input.
        assert not (home / "evalyard.db").exists()


CASES = [
    ("bad.jsonl", '{"id": "a", "candidate": "x", "reference": "x"}\n{"id": "b", "candidate": \n',
     ["bad.jsonl:2", "malformed JSON"], ["-s", "contains"]),
    ("typed.jsonl", '{"id": "a", "candidate": "x", "reference": "x"}\n{"id": "b", "candidate": 42, "reference": "x"}\n',
     ["typed.jsonl:2", "'candidate'", "expected text"], ["-s", "contains"]),
    ("ctx.jsonl", '{"id": "a", "candidate": "x", "context": {"a": 1}}\n',
     ["ctx.jsonl:1", "'context'"], ["-s", "json_valid"]),
    ("missing.jsonl", '{"id": "a", "candidate": "x", "reference": "x"}\n{"id": "b", "candidate": "y"}\n',
     ["missing.jsonl:2", "'reference'", "contains"], ["-s", "contains"]),
    ("dup.jsonl", '{"id": "a", "candidate": "x"}\n{"id": "a", "candidate": "y"}\n',
     ["dup.jsonl:2", "'id'", "duplicate"], ["-s", "json_valid"]),
    ("bad.csv", 'id,candidate,reference\na,x,x\nb,"unterminated\n',
     ["bad.csv:3", "malformed CSV"], ["-s", "contains"]),
    ("cols.csv", 'id,candidate,reference\na,x,x\nb,y\n',
     ["cols.csv:3", "expected 3 columns"], ["-s", "contains"]),
    ("ok.jsonl", '{"id": "a", "candidate": "x"}\n',
     ["unknown scorer 'nope'"], ["-s", "nope"]),
    ("ok2.jsonl", '{"id": "a", "candidate": "x", "reference": "x"}\n',
     ["contains.case_sensitive", "expected true or false"], ["-s", "contains:case_sensitive=maybe"]),
    ("ok3.jsonl", '{"id": "a", "candidate": "x", "reference": "x"}\n',
     ["unknown config option 'colour'"], ["-s", "contains:colour=red"]),
    ("ok4.jsonl", '{"id": "a", "candidate": "x"}\n',
     ["not a valid regular expression"], ["-s", "regex_match:pattern=(("]),
]


@pytest.mark.parametrize("name,content,fragments,extra", CASES, ids=[c[0] for c in CASES])
def test_bad_data_files(tmp_path, isolated_home, name, content, fragments, extra):
    path = write(tmp_path / name, content)
    result = run_cli("run", str(path), *extra)
    assert_one_line_error(result, *fragments, home=isolated_home)


YAML_CASES = [
    ("malformed", "name: x\ncases:\n  - {id: a, candidate: 'x'\n", ["malformed YAML", ".yaml:"]),
    ("unknown key", "name: x\nscorer: [contains]\ncases: [{id: a, candidate: x}]\n", ["'scorer'", "unknown key"]),
    ("mistyped case", "name: x\nscorers: [json_valid]\ncases:\n  - id: a\n    candidate: x\n  - id: b\n    candidate: [1, 2]\n",
     ["suite.yaml:6", "'candidate'"]),
    ("unknown scorer line", "name: x\nscorers:\n  - json_valid\n  - nosuch\ncases: [{id: a, candidate: x}]\n",
     ["suite.yaml:4", "unknown scorer 'nosuch'"]),
    ("bad config", "name: x\nscorers:\n  - name: contains\n    config: {case_sensitive: 3}\ncases: [{id: a, candidate: x, reference: x}]\n",
     ["suite.yaml:3", "contains.case_sensitive"]),
    ("missing data file", "name: x\nscorers: [json_valid]\ndata: nowhere.jsonl\n", ["nowhere.jsonl", "file not found"]),
    ("both data and cases", "name: x\ndata: a.jsonl\ncases: []\n", ["exactly one of"]),
    ("bad threshold", "name: x\nscorers: [{name: json_valid, threshold: high}]\ncases: [{id: a, candidate: x}]\n",
     ["suite.yaml:2", "threshold"]),
    *[(f"model setting {setting}", "name: x\nscorers: [json_valid]\ncases: [{id: a, candidate: x}]\nmodels:\n"
       f"  openai/m: {{seed: 1, {setting}}}\n", ["suite.yaml:5", f"field 'models.openai/m.{key}'", expected])
      for setting, key, expected in [
          ("concurrency: 2.5", "concurrency", "expected a positive whole number"),
          ("rpm: 0", "rpm", "expected a positive number"),
          ("api_key_env: 3", "api_key_env", "expected text"),
          ("api_key: sk-123", "api_key", "name its environment variable with api_key_env"),
          ("params: [1]", "params", "expected a mapping"),
          ("supports_schema: 'yes'", "supports_schema", "expected true or false"),
          ("batch_poll_s: -1", "batch_poll_s", "expected a positive number")]],
]


@pytest.mark.parametrize("label,content,fragments", YAML_CASES, ids=[c[0] for c in YAML_CASES])
def test_bad_yaml_suites(tmp_path, isolated_home, label, content, fragments):
    path = write(tmp_path / "suite.yaml", content)
    assert_one_line_error(run_cli("run", str(path)), *fragments, home=isolated_home)


def test_bad_fail_under_and_missing_suite(tmp_path, isolated_home):
    path = write(tmp_path / "ok.jsonl", '{"id": "a", "candidate": "x"}\n')
    assert_one_line_error(run_cli("run", str(path), "-s", "json_valid", "--fail-under", "contains=1"),
                          "--fail-under contains", home=isolated_home)
    assert_one_line_error(run_cli("run", str(path), "-s", "json_valid", "--fail-under", "json_valid"),
                          "NAME=NUMBER", home=isolated_home)
    assert_one_line_error(run_cli("run", str(tmp_path / "absent.jsonl"), "-s", "json_valid"), "file not found",
                          home=isolated_home)
    assert_one_line_error(run_cli("run"), "SUITE", home=isolated_home)


@pytest.mark.parametrize("option, value, fragment", [
    ("-s", "no_such_scorer", "--scorer 'no_such_scorer': unknown scorer 'no_such_scorer'"),
    ("-s", "contains:bogus=1", "--scorer 'contains:bogus=1': bad config for scorer contains: unknown config option"),
    ("-s", "contains:x", "--scorer 'contains:x': expected NAME:key=value"),
    ("--generator", "echo:x", "--generator 'echo:x': expected NAME:key=value"),
])
def test_errors_about_a_command_line_choice_name_its_option(tmp_path, isolated_home, option, value, fragment):
    path = write(tmp_path / "ok.jsonl", '{"id": "a", "candidate": "x", "reference": "x"}\n')
    args = ["-s", "contains"] if option != "-s" else []
    assert_one_line_error(run_cli("run", str(path), option, value, *args), fragment, home=isolated_home)


def test_existing_database_untouched_by_bad_input(tmp_path, isolated_home):
    good = write(tmp_path / "good.jsonl", '{"id": "a", "candidate": "{}"}\n')
    assert run_cli("run", str(good), "-s", "json_valid").exit_code == 0
    bad = write(tmp_path / "bad.jsonl", '{"id": "a", "candidate": "{}"}\n{"id": "b"}\n')
    assert_one_line_error(run_cli("run", str(bad), "-s", "json_valid"), "bad.jsonl:2", "'candidate'")
    listing = run_cli("runs", "list", "--json")
    import json

    assert len(json.loads(listing.output)) == 1


def test_unreachable_database_is_one_line_exit_2(tmp_path):
    path = write(tmp_path / "ok.jsonl", '{"id": "a", "candidate": "{}"}\n')
    result = run_cli("run", str(path), "-s", "json_valid", "--db", "postgresql+psycopg://nobody@127.0.0.1:1/none")
    assert_one_line_error(result, "cannot open database", "127.0.0.1")
    result = run_cli("runs", "list", "--db", "nosuchdriver://x")
    assert_one_line_error(result, "cannot open database", "nosuchdriver")
