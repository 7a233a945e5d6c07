"""One run service: the CLI, `evalyard.evaluate` and Python callers build a RunRequest and
`Application.run` does the rest (forecast, execute or resume, checks, agreements, outputs)."""

from __future__ import annotations

import json

import pytest

import evalyard
from evalyard import Case
from evalyard.run_service import RunRequest


def cases(scripts):
    return [Case(id=f"c{i}", candidate="x", metadata={"script": s}) for i, s in enumerate(scripts)]


def test_checks_and_error_share_come_with_the_outcome(scripted_plugin):
    outcome = scripted_plugin.run(RunRequest(suite=cases([1.0, 0.0, "raise", 0.5]), scorers=["scripted"],
                                             fail_under=[("scripted", 0.9)], fail_on_error=0.2))
    assert outcome.result.status == "completed"
    assert outcome.failed_checks == [{"scorer": "scripted", "minimum": 0.9, "mean": pytest.approx(0.5)}]
    assert outcome.error_share == pytest.approx(0.25) and outcome.too_many_errors and outcome.failed
    data = outcome.to_dict()
    assert data["failed_checks"] == outcome.failed_checks and data["error_share"] == pytest.approx(0.25)


def test_a_forecast_runs_and_stores_nothing(scripted_plugin):
    outcome = scripted_plugin.run(RunRequest(suite=cases([1.0, 0.0]), scorers=["scripted"], forecast_only=True))
    assert outcome.result is None and not outcome.failed
    assert outcome.forecast["totals"]["calls"] == 0 and [line["name"] for line in outcome.forecast["lines"]] == [
        "scripted"]
    assert scripted_plugin.open_store().list_runs() == []


@pytest.mark.parametrize("request_kwargs, message", [
    ({"resume": "abc", "scorers": ["scripted"]}, "continues a run with its own suite"),
    ({}, "give a SUITE file, or --resume RUN_ID"),
    ({"suite": [], "run_to_cap": True}, "--run-to-cap runs up to --max-cost"),
    ({"suite": [], "cluster": "nometa"}, "cluster"),
    ({"suite": [Case(id="a", candidate="x")], "scorers": ["scripted"], "fail_under": [("nosuch", 1.0)]},
     "--fail-under nosuch: scorer is not part of this run"),
    ({"suite": [Case(id="a", candidate="x")], "scorers": ["scripted"], "outputs": [("nosuch", None)]},
     "unknown output format 'nosuch'"),
])
def test_a_bad_request_is_refused_before_anything_is_stored(scripted_plugin, request_kwargs, message):
    with pytest.raises(evalyard.EvalyardError, match=message.replace("(", r"\(")):
        scripted_plugin.run(RunRequest(**request_kwargs))
    assert scripted_plugin.open_store().list_runs() == []


def test_evaluate_is_a_client_of_the_run_service(scripted_plugin, tmp_path):
    target = tmp_path / "results.jsonl"
    result = evalyard.evaluate(cases([1.0, 0.25]), ["scripted"], app=scripted_plugin,
                               outputs=[("jsonl", str(target))])
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert [(r["case_id"], r["value"]) for r in rows] == [("c0", 1.0), ("c1", 0.25)]
    assert result.summary["scripted"]["mean"] == pytest.approx(0.625)

