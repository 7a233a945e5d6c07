"""`evalyard run`, `runs` and `compare` end to end through the CLI, with the scripted test plugin."""

from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

from testutil import write
from evalyard.cli import cli


APP = None


def invoke(*args):
    return CliRunner().invoke(cli, list(args), obj=APP, catch_exceptions=False)


@pytest.fixture(autouse=True)
def _this_tests_app(app):
    """The CLI calls below run against this test's application (with its plugins)."""
    global APP
    APP = app


def scripted_file(tmp_path, scripts, name="cases.jsonl"):
    lines = [json.dumps({"id": f"c{i}", "candidate": "x", "metadata": {"script": s}}) for i, s in enumerate(scripts)]
    return write(tmp_path / name, "\n".join(lines) + "\n")


def run_json(*args):
    result = invoke("run", *args, "--json")
    return result, json.loads(result.output)


def test_scorer_errors_are_recorded_not_zero(tmp_path, scripted_plugin):
    path = scripted_file(tmp_path, [1.0, "raise", 0.0, "nan", "none", 0.5])
    result, data = run_json(str(path), "-s", "scripted")
    assert result.exit_code == 0
    stats = data["scorers"]["scripted"]
    assert stats["count"] == 6 and stats["errors"] == 3 and stats["scored"] == 3
    assert stats["mean"] == pytest.approx(0.5)  # errors are not averaged in as zeros
    assert stats["pass_rate"] == pytest.approx(2 / 3)
    rows = [json.loads(line) for line in invoke("runs", "export", data["run_id"]).output.splitlines()]
    assert [r["case_id"] for r in rows] == [f"c{i}" for i in range(6)]
    by_case = {r["case_id"]: r for r in rows}
    assert by_case["c1"]["value"] is None and "scripted failure on c1" in by_case["c1"]["error"]
    assert by_case["c3"]["value"] is None and "NaN" in by_case["c3"]["error"]
    assert by_case["c4"]["error"] and by_case["c4"]["passed"] is None
    assert by_case["c0"] == {"case_id": "c0", "scorer": "scripted", "value": 1.0, "label": "high", "passed": True,
                             "details": {}, "error": None, "media": None}


@pytest.mark.parametrize("scorer", ["scripted_async", "scripted_process"])
def test_async_and_process_executors(tmp_path, scripted_plugin, scorer, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(__import__("testutil").TESTS))  # spawned workers import the plugin
    path = scripted_file(tmp_path, [1.0, 0.0, "raise"] * 4)
    result, data = run_json(str(path), "-s", scorer, "-j", "2")
    assert result.exit_code == 0
    stats = data["scorers"][scorer]
    assert (stats["count"], stats["errors"], stats["mean"]) == (12, 4, 0.5)
    if scorer == "scripted_process":
        import os

        rows = [json.loads(line) for line in invoke("runs", "export", data["run_id"]).output.splitlines()]
        pids = {r["details"]["pid"] for r in rows if r["error"] is None}
        assert os.getpid() not in pids


def test_fail_under_and_max_errors_exit_1(tmp_path, scripted_plugin):
    path = scripted_file(tmp_path, [1.0, 0.0, 0.0, 0.0])
    assert invoke("run", str(path), "-s", "scripted", "--fail-under", "scripted=0.2").exit_code == 0
    failed = invoke("run", str(path), "-s", "scripted", "--fail-under", "scripted=0.3")
    assert failed.exit_code == 1 and "below 0.3" in failed.output

    many = scripted_file(tmp_path, ["raise"] * 40, name="errors.jsonl")
    result = invoke("run", str(many), "-s", "scripted", "--max-errors", "3", "-j", "1")
    assert result.exit_code == 1 and "stopped after" in result.output
    run_id = result.output.split()[1]
    shown = json.loads(invoke("runs", "show", run_id, "--json").output)
    assert shown["status"] == "failed"
    assert 4 <= shown["results"] < 40  # stopped early; what was scored is kept


def test_yaml_suite_with_field_map_thresholds_and_scorer_override(tmp_path, scripted_plugin):
    write(tmp_path / "data.jsonl", "\n".join(json.dumps(
        {"qid": f"q{i}", "answer": "x", "gold": "x" if i % 2 else "y", "metadata": {"script": i / 10}})
        for i in range(6)) + "\n")
    suite = write(tmp_path / "suite.yaml", """
name: mapped
description: field mapping and thresholds
data: data.jsonl
fields: {id: qid, candidate: answer, reference: gold}
scorers:
  - name: scripted
    threshold: 0.3
  - contains
thresholds: {contains: 1}
""")
    result, data = run_json(str(suite))
    assert result.exit_code == 0, result.output
    assert data["suite"] == "mapped"
    assert data["scorers"]["scripted"]["pass_rate"] == pytest.approx(3 / 6)  # 0.3, 0.4, 0.5 pass
    assert data["scorers"]["contains"]["mean"] == pytest.approx(0.5)
    # --scorer replaces the list but keeps the suite's config for the named scorer
    result, data = run_json(str(suite), "-s", "scripted")
    assert list(data["scorers"]) == ["scripted"] and data["scorers"]["scripted"]["pass_rate"] == pytest.approx(0.5)
    result, data = run_json(str(suite), "-s", "scripted:threshold=0.45")
    assert data["scorers"]["scripted"]["pass_rate"] == pytest.approx(1 / 6)


def test_csv_input_and_exports(tmp_path):
    path = write(tmp_path / "cases.csv", 'id,input,candidate,reference,context\n'
                                       'a,Q1,Paris is nice,Paris,"[""p1"", ""p2""]"\nb,Q2,"{""k"": 1}",k,\n')
    result, data = run_json(str(path), "-s", "contains", "-s", "json_valid", "--name", "csv-run")
    assert data["name"] == "csv-run" and data["scorers"]["contains"]["mean"] == 1.0
    out = invoke("runs", "export", "csv-run", "--format", "csv").output
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["case_id"], r["scorer"], r["passed"]) for r in rows] == [
        ("a", "contains", "true"), ("a", "json_valid", "false"), ("b", "contains", "true"), ("b", "json_valid", "true")]
    assert json.loads(rows[1]["details"])["reason"].startswith("Expecting value")


def test_runs_list_show_delete(tmp_path):
    path = write(tmp_path / "c.jsonl", '{"id": "a", "candidate": "{}"}\n')
    first = json.loads(invoke("run", str(path), "-s", "json_valid", "--json").output)["run_id"]
    second = json.loads(invoke("run", str(path), "-s", "json_valid", "--json").output)["run_id"]
    listed = json.loads(invoke("runs", "list", "--json").output)
    assert [r["run_id"] for r in listed] == [second, first]
    assert listed[0]["suite_version"] == listed[1]["suite_version"]  # same content, same suite version
    shown = invoke("runs", "show", first[:6])
    assert first in shown.output and "json_valid" in shown.output
    assert invoke("runs", "delete", first, "--yes").exit_code == 0
    assert [r["run_id"] for r in json.loads(invoke("runs", "list", "--json").output)] == [second]
    missing = invoke("runs", "show", first)
    assert missing.exit_code == 2 and "no run" in missing.output


def test_compare_reports_deltas_and_regressions(tmp_path, scripted_plugin):
    base = scripted_file(tmp_path, [0.9] * 20, name="base.jsonl")
    new_scripts = [0.9] * 10 + [0.2] * 10
    new = scripted_file(tmp_path, new_scripts, name="new.jsonl")
    base_id = run_json(str(base), "-s", "scripted")[1]["run_id"]
    new_id = run_json(str(new), "-s", "scripted")[1]["run_id"]
    result = invoke("compare", base_id, new_id, "--json")
    data = json.loads(result.output)["scorers"]["scripted"]
    assert data["paired_cases"] == 20
    assert data["mean_delta"] == pytest.approx(-0.35)
    assert (data["wins"], data["losses"], data["ties"]) == (0, 10, 10)
    assert data["regressed"] and data["ci95"][1] < 0
    assert {w["case_id"] for w in data["worst_cases"]} <= {f"c{i}" for i in range(10, 20)}
    assert invoke("compare", base_id, new_id, "--fail-on-regression").exit_code == 1
    assert invoke("compare", base_id, base_id, "--fail-on-regression").exit_code == 0
    text = invoke("compare", base_id, new_id).output
    assert "REGRESSED" in text and "most regressed" in text


def test_scorers_and_plugins_listing(scripted_plugin):
    scorers = {s["name"]: s for s in json.loads(invoke("scorers", "--json").output)}
    assert scorers["scripted"]["plugin"] == "scripted_scorers"
    assert scorers["scripted"]["config"] == [{"name": "delay", "type": "float", "default": 0.0, "help": ""}]
    assert scorers["contains"]["requires"] == ["reference", "candidate"]
    plugins = {p["name"]: p for p in json.loads(invoke("plugins", "--json", "--all").output)}
    assert plugins["evalyard.builtins.loaders"]["hooks"] == ["register_loaders"]
    assert plugins["scripted_scorers"]["hooks"] == ["register_generators", "register_scorers"]
    assert plugins["evalyard.builtins.scorers"]["namespace"] == "evalyard"
    assert scorers["contains"]["qualified"] == "evalyard/contains"


def test_generators_listing(scripted_plugin):
    listed = json.loads(invoke("generators", "--json").output)
    generators = {g["qualified"]: g for g in listed}
    echo = generators["scripted_scorers/echo"]
    assert (echo["name"], echo["plugin"], echo["produces"], echo["requires"], echo["fills"]) == (
        "echo", "scripted_scorers", "candidate", ["input"], ["candidate"])
    assert echo["config"] == [{"name": "suffix", "type": "str", "default": "", "help": ""},
                              {"name": "delay", "type": "float", "default": 0.0, "help": ""}]
    assert echo["description"] == "" and echo["version"] == "1"
    model = generators["evalyard/model"]
    assert model["name"] == "model" and [c["name"] for c in model["config"]][:2] == ["model", "prompt"]
    text = invoke("generators")
    assert text.exit_code == 0
    head, rule, *rows = text.output.splitlines()
    assert head.split() == ["generator", "plugin", "requires", "fills", "config", "(defaults)"]
    assert [r.split()[0] for r in rows] == [g["name"] for g in listed]
    assert any(r.split()[:4] == ["echo", "scripted_scorers", "input", "candidate"] and "suffix=''" in r for r in rows)


def test_user_threshold_overrides_a_scorers_own_verdict(tmp_path, scripted_plugin):
    lines = [{"id": "a", "candidate": "x", "metadata": {"script": 0.2, "verdict": True}},
             {"id": "b", "candidate": "x", "metadata": {"script": 0.9, "verdict": False}}]
    path = write(tmp_path / "c.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    own = json.loads(invoke("run", str(path), "-s", "scripted", "--json").output)["run_id"]
    assert [json.loads(r)["passed"] for r in invoke("runs", "export", own).output.splitlines()] == [True, False]
    user = json.loads(invoke("run", str(path), "-s", "scripted:threshold=0.5", "--json").output)["run_id"]
    assert [json.loads(r)["passed"] for r in invoke("runs", "export", user).output.splitlines()] == [False, True]


def test_run_reference_by_suite_name_means_its_newest_run(tmp_path):
    path = write(tmp_path / "named.jsonl", '{"id": "a", "candidate": "{}"}\n')
    invoke("run", str(path), "-s", "json_valid")
    newest = json.loads(invoke("run", str(path), "-s", "json_valid", "--json").output)["run_id"]
    assert json.loads(invoke("runs", "show", "named", "--json").output)["run_id"] == newest
