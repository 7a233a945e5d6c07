"""`evalyard run` as users script it: `SUITE --resume RUN_ID`, `--resume RUN_ID --executor NAME`,
`--field` column mapping, `--format`, and the CLI's scorer syntax inside a suite's `scorers:`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from evalyard.cli import cli
from testutil import write


@pytest.fixture
def run_cli(installed_plugins, scripted_plugin):  # the lexicon plugin's exact_match as users have it
    def invoke(*args):
        return CliRunner().invoke(cli, [str(a) for a in args], obj=scripted_plugin, catch_exceptions=False)
    return invoke


def stopped_run(tmp_path, run_cli, name="cases.jsonl"):
    """A suite file and a run of it stopped early (by --max-errors), with results still to make."""
    scripts = ["raise"] + [i / 10 for i in range(11)]
    data = write(tmp_path / name, "".join(json.dumps({"id": f"c{i}", "candidate": "x", "metadata": {"script": s}})
                                          + "\n" for i, s in enumerate(scripts)))
    suite = write(tmp_path / "suite.yaml", f"name: stopped\ndata: {name}\nscorers:\n  - scripted\n")
    result = run_cli("run", suite, "--max-errors", "0", "-j", "1", "--json")
    assert result.exit_code == 1, result.output
    run = json.loads(result.stdout)
    assert run["status"] == "failed" and run["scorers"]["scripted"]["count"] < len(scripts)
    return suite, data, run["run_id"], len(scripts)


def test_the_same_command_with_resume_finishes_the_run(tmp_path, run_cli):
    suite, _, run_id, n = stopped_run(tmp_path, run_cli)
    result = run_cli("run", suite, "--resume", run_id, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["run_id"] == run_id and data["status"] == "completed" and data["scorers"]["scripted"]["count"] == n


def test_a_data_file_resumes_with_the_runs_own_scorers(tmp_path, run_cli):
    """`run DATA.jsonl --resume RUN` without -s: a data file names no scorers, so the run's are meant
    (it was refused with "no scorers selected")."""
    scripts = ["raise"] + [i / 10 for i in range(11)]
    data = write(tmp_path / "cases.jsonl", "".join(json.dumps({"id": f"c{i}", "candidate": "x", "metadata": {
        "script": s}}) + "\n" for i, s in enumerate(scripts)))
    first = run_cli("run", data, "-s", "scripted:delay=0.001", "--max-errors", "0", "-j", "1", "--json")
    assert first.exit_code == 1, first.output
    run_id = json.loads(first.stdout)["run_id"]
    result = run_cli("run", data, "--resume", run_id, "--json")
    assert result.exit_code == 0, result.output
    resumed = json.loads(result.stdout)
    assert resumed["run_id"] == run_id and resumed["status"] == "completed"
    assert resumed["scorers"]["scripted"]["count"] == len(scripts)
    other = run_cli("run", data, "-s", "scripted", "--resume", run_id)  # naming other config still names it
    assert other.exit_code == 2 and "differs from run" in other.output


def test_the_bare_resume_keeps_working(tmp_path, run_cli):
    _, _, run_id, n = stopped_run(tmp_path, run_cli)
    data = json.loads(run_cli("run", "--resume", run_id, "--json").stdout)
    assert data["status"] == "completed" and data["scorers"]["scripted"]["count"] == n


def test_resume_on_another_executor(tmp_path, run_cli, scripted_plugin):
    _, _, run_id, n = stopped_run(tmp_path, run_cli)
    result = run_cli("run", "--resume", run_id, "--executor", "inline", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["scorers"]["scripted"]["count"] == n
    store = scripted_plugin.open_store()
    pairs = [(r.case_id, r.scorer) for r in store.results(run_id)]
    assert len(pairs) == len(set(pairs)) == n  # every case exactly once across the two executors


def test_a_run_stored_with_the_old_executor_name_inline_resumes(tmp_path, run_cli, scripted_plugin):
    """``inline`` was the thread executor's name: runs stored with it resume on the thread executor."""
    from sqlmodel import Session

    from evalyard.store.models import RunRow

    _, _, run_id, n = stopped_run(tmp_path, run_cli)
    store = scripted_plugin.open_store()
    assert store.get_run(run_id).scorers[0]["executor"] == "thread"
    with Session(store.engine) as session:
        row = session.get(RunRow, run_id)
        row.scorers = [{**scorer, "executor": "inline"} for scorer in row.scorers]
        session.add(row)
        session.commit()
    result = run_cli("run", "--resume", run_id, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["scorers"]["scripted"]["count"] == n


def test_a_changed_suite_is_refused_naming_the_difference(tmp_path, run_cli):
    suite, data, run_id, _ = stopped_run(tmp_path, run_cli)
    data.write_text(data.read_text().replace('"c3"', '"c3-renamed"'))
    result = run_cli("run", suite, "--resume", run_id)
    assert result.exit_code == 2
    assert "has changed since run" in result.output and "\n" not in result.output.strip()


def test_another_suite_file_is_refused(tmp_path, run_cli):
    suite, _, run_id, _ = stopped_run(tmp_path, run_cli)
    other = write(tmp_path / "other.yaml", suite.read_text())
    result = run_cli("run", other, "--resume", run_id)
    assert result.exit_code == 2 and f"was started from {suite}" in result.output


def test_other_scorers_or_config_are_refused(tmp_path, run_cli):
    suite, _, run_id, _ = stopped_run(tmp_path, run_cli)
    result = run_cli("run", suite, "-s", "json_valid", "--resume", run_id)
    assert result.exit_code == 2 and "scores scripted; this command scores json_valid" in result.output
    result = run_cli("run", suite, "-s", "scripted:delay=0.001", "--resume", run_id)
    assert result.exit_code == 2 and "scorer scripted: differs" in result.output and "config.delay" in result.output


def test_resume_alone_refuses_scorer_options(tmp_path, run_cli):
    _, _, run_id, _ = stopped_run(tmp_path, run_cli)
    result = run_cli("run", "--resume", run_id, "-s", "contains")
    assert result.exit_code == 2 and "repeat the run's whole command" in result.output


def test_field_maps_a_data_files_columns(tmp_path, run_cli):
    path = write(tmp_path / "qa.csv", "question,answer,gold\nCapital of France?,Paris,Paris\n"
                                      "Capital of Spain?,Madrid,Lisbon\n")
    result = run_cli("run", path, "--field", "reference=gold", "--field", "candidate=answer",
                     "--field", "input=question", "-s", "exact_match", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["scorers"]["exact_match"]["mean"] == 0.5 and data["scorers"]["exact_match"]["errors"] == 0
    jsonl = write(tmp_path / "qa.jsonl", json.dumps({"q": "x?", "a": "Yes", "g": "yes"}) + "\n")
    data = json.loads(run_cli("run", jsonl, "--field", "candidate=a", "--field", "reference=g",
                              "-s", "exact_match:case_sensitive=false", "--json").stdout)
    assert data["scorers"]["exact_match"]["mean"] == 1.0


@pytest.mark.parametrize("option, message", [
    ("answer", "expected CASE_FIELD=COLUMN"),
    ("answers=gold", "'answers' is not a case field"),
])
def test_bad_field_options_are_one_line_errors(tmp_path, run_cli, option, message):
    path = write(tmp_path / "qa.csv", "answer,gold\nParis,Paris\n")
    result = run_cli("run", path, "--field", option, "-s", "exact_match")
    assert result.exit_code == 2 and message in result.output and "\n" not in result.output.strip()


def test_field_on_a_yaml_suite_points_at_its_fields_key(tmp_path, run_cli):
    suite = write(tmp_path / "s.yaml", "name: s\ncases:\n  - {id: a, candidate: x}\nscorers: [contains]\n")
    result = run_cli("run", suite, "--field", "candidate=answer")
    assert result.exit_code == 2 and "in its own 'fields:'" in result.output


def test_a_suite_takes_the_cli_scorer_syntax(tmp_path, run_cli, scripted_plugin):
    suite = write(tmp_path / "s.yaml", "name: s\ncases:\n  - {id: a, candidate: Paris, reference: paris}\n"
                                       "scorers:\n  - exact_match:case_sensitive=false,threshold=1\n")
    result = run_cli("run", suite, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["scorers"]["exact_match"]["mean"] == 1.0
    (stored,) = scripted_plugin.open_store().get_run(data["run_id"]).scorers
    assert stored["config"]["case_sensitive"] is False and stored["threshold"] == 1.0
    bad = write(tmp_path / "bad.yaml", "name: s\ncases:\n  - {id: a, candidate: x}\nscorers:\n"
                                       "  - contains\n  - exact_match:case_sensitive\n")
    result = run_cli("run", bad)
    assert result.exit_code == 2
    assert f"{bad}:6: field 'scorers': 'exact_match:case_sensitive': expected NAME:key=value" in result.output


def test_format_names_a_data_format_and_unknown_ones_list_the_registry(tmp_path, run_cli):
    path = write(tmp_path / "cases.txt", json.dumps({"id": "a", "candidate": "x", "reference": "x"}) + "\n")
    result = run_cli("run", path, "-s", "exact_match")
    assert result.exit_code == 2 and "no data format for cases.txt" in result.output
    assert "jsonl (.jsonl, .ndjson)" in result.output and "csv (.csv)" in result.output
    data = json.loads(run_cli("run", path, "--format", "jsonl", "-s", "exact_match", "--json").stdout)
    assert data["scorers"]["exact_match"]["mean"] == 1.0
    result = run_cli("run", path, "--format", "yaml-ish", "-s", "exact_match")
    assert result.exit_code == 2 and "unknown data format 'yaml-ish'" in result.output
    # a suite whose data names a file with line breaks (the door fuzzer's): still one line, escaped
    odd = write(tmp_path / "odd.yaml", "name: s\ndata: \"\\n\\n  \"\nscorers: [exact_match]\n")
    result = run_cli("run", odd)
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "no data format for" in result.output and "\\n" in result.output
