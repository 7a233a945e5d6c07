"""Experiments: one suite through a grid of models x prompts x settings, each cell an ordinary run,
compared in one table; resumable cell by cell; forecast with --plan. The models under test are
scripted models behind litellm (the real model layer and response cache)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import evalyard
from evalyard.cli import cli
from evalyard.experiments import Cell, ExperimentRequest, frontier, grid, parse_param
from evalyard.run_service import RunRequest

QUESTIONS = {f"q{i}": (f"What is {i} plus {i}?", str(2 * i)) for i in range(6)}


def invoke(app, *args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj=app, catch_exceptions=False)


@pytest.fixture
def suite(tmp_path):
    path = tmp_path / "sums.jsonl"
    path.write_text("".join(json.dumps({"id": case_id, "input": question, "reference": answer}) + "\n"
                            for case_id, (question, answer) in QUESTIONS.items()))
    return str(path)


@pytest.fixture
def models(rules):
    """A model right on every case, one right on half of them."""
    right = rules([{"contains": q, "content": f"It is {a}."} for q, a in QUESTIONS.values()], name="right")
    half = rules([{"contains": q, "content": f"It is {a if i % 2 == 0 else 'unknown'}."}
                  for i, (q, a) in enumerate(QUESTIONS.values())], name="half")
    return right, half


def test_the_grid_is_every_combination_with_the_first_as_baseline():
    cells = grid(["a", "b"], ["p1", None], {"temperature": [0, 0.7]})
    assert len(cells) == 8 and cells[0] == Cell("a", "p1", (("temperature", 0),))
    assert cells[0].label == "a prompt=p1 temperature=0" and cells[-1].label == "b temperature=0.7"
    assert parse_param("temperature=0,0.7") == ("temperature", [0, 0.7])
    with pytest.raises(evalyard.InputError, match="NAME=VALUE"):
        parse_param("temperature")


def test_frontier_keeps_the_cells_no_other_beats_on_quality_and_cost():
    rows = [{"cell": 0, "cost": 1.0, "scorers": {"s": {"mean": 0.9}}, "higher_is_better": {"s": True}},
            {"cell": 1, "cost": 0.5, "scorers": {"s": {"mean": 0.6}}, "higher_is_better": {"s": True}},
            {"cell": 2, "cost": 2.0, "scorers": {"s": {"mean": 0.8}}, "higher_is_better": {"s": True}},
            {"cell": 3, "cost": None, "scorers": {"s": {"mean": 1.0}}, "higher_is_better": {"s": True}}]
    assert frontier(rows, "s") == [0, 1]


def test_a_grid_from_the_command_line_compares_every_cell_with_the_baseline(app, suite, models):
    right, half = models
    result = invoke(app, "run", suite, "-s", "contains", "-m", right, "-m", half, "--param", "temperature=0,0.5",
                    "--json", "--name", "sums-grid")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["name"] == "sums-grid" and len(data["cells"]) == 4
    rows = data["comparison"]["cells"]
    assert [r["scorers"]["contains"]["mean"] for r in rows] == [1.0, 1.0, 0.5, 0.5]
    versus = rows[2]["scorers"]["contains"]["versus_baseline"]
    assert versus["mean_delta"] == pytest.approx(-0.5) and versus["paired_cases"] == 6 and versus["losses"] == 3
    assert data["comparison"]["tests"] == 3 and versus["p_holm"] >= versus["p"]
    runs = {r["run_id"] for r in rows}
    assert len(runs) == 4  # each cell an ordinary run
    shown = invoke(app, "runs", "show", rows[2]["run_id"], "--json")
    assert json.loads(shown.output)["generator"]["config"]["model"] == half
    listed = json.loads(invoke(app, "experiments", "list", "--json").output)
    assert listed == [{"experiment_id": data["experiment_id"], "name": "sums-grid", "source": suite, "cells": 4,
                       "runs": 4, "created_at": listed[0]["created_at"]}]
    text = invoke(app, "experiments", "show", "sums-grid").output
    assert f"experiment {data['experiment_id']} (sums-grid): 4 cells" in text
    assert "1.000 [1.000, 1.000] (baseline)" in text and "-0.500 [" in text and "Holm-adjusted over 3 comparisons" in text


def test_plan_forecasts_every_cell_and_runs_nothing(app, suite, models):
    right, half = models
    result = invoke(app, "run", suite, "-s", "contains", "-m", right, "-m", half, "--plan", "--json")
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)["plan"]
    assert [c["forecast"]["totals"]["calls"] for c in plan["cells"]] == [6, 6]
    assert plan["totals"]["calls"] == 12
    assert json.loads(invoke(app, "experiments", "list", "--json").output) == []
    assert json.loads(invoke(app, "runs", "list", "--json").output) == []


def test_an_interrupted_grid_resumes_every_cell_once(app, suite, models):
    """Stopped as the second cell's run starts; --resume EXPERIMENT finishes it and starts the rest:
    every (cell, case, scorer) exactly once, no run twice."""
    right, half = models
    started = []

    def stop_at_the_second_cell(run_id, total):
        started.append(run_id)
        if len(started) == 2:
            raise KeyboardInterrupt

    request = RunRequest(suite=suite, scorers=["contains"], on_start=stop_at_the_second_cell)
    with pytest.raises(KeyboardInterrupt):
        app.experiment(ExperimentRequest(run=request, cells=grid([right, half, right], ["p"] and [None]),
                                         name="stopped"))
    experiment_id = json.loads(invoke(app, "experiments", "list", "--json").output)[0]["experiment_id"]
    result = invoke(app, "run", "--resume", experiment_id, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [c["status"] for c in data["cells"]] == ["completed"] * 3
    assert data["cells"][1]["run_id"] == started[1]  # the stopped cell's own run, resumed
    store = app.open_store()
    assert len(store.list_runs()) == 3
    for cell in data["cells"]:
        assert store.result_count(cell["run_id"]) == len(QUESTIONS)
    again = json.loads(invoke(app, "run", "--resume", experiment_id, "--json").stdout)
    assert [c["run_id"] for c in again["cells"]] == [c["run_id"] for c in data["cells"]]  # nothing new


def test_the_python_api(app, suite, models):
    right, half = models
    outcome = evalyard.experiment(suite, [right, half], scorers=["contains"], app=app)
    assert [o.result.summary["contains"]["mean"] for o in outcome.outcomes] == [1.0, 0.5]
    assert outcome.comparison["cells"][1]["scorers"]["contains"]["versus_baseline"]["wins"] == 0
    assert not outcome.failed


def test_a_suite_matrix_is_the_grid(app, suite, models, tmp_path):
    right, half = models
    path = tmp_path / "grid.yaml"
    path.write_text(f"name: sums\ndata: {suite}\nscorers: [contains]\nmatrix:\n  models:\n    - {right}\n"
                    f"    - model: {half}\n      seed: 7\n  params:\n    temperature: [0]\n")
    result = invoke(app, "run", path, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [c["label"] for c in data["cells"]] == [f"{right} temperature=0", f"{half} temperature=0"]
    assert [c["scorers"]["contains"]["mean"] for c in data["cells"]] == [1.0, 0.5]
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"name: sums\ndata: {suite}\nscorers: [contains]\nmatrix:\n  models: [{right}]\n  epoch: 3\n")
    refused = invoke(app, "run", bad)
    assert refused.exit_code == 2 and "bad.yaml" in refused.output and "matrix.epoch" in refused.output
    assert len(json.loads(invoke(app, "experiments", "list", "--json").output)) == 1


def test_evaluate_of_a_suite_with_a_matrix_is_the_grid_the_cli_runs(app, suite, models, tmp_path):
    """`evalyard.evaluate(SUITE_WITH_MATRIX)` runs the grid as `evalyard run` does (it used to try one
    plain run and fail for want of a candidate); one model given runs that model alone."""
    import evalyard
    from evalyard.experiments import ExperimentOutcome

    right, half = models
    path = tmp_path / "grid.yaml"
    path.write_text(f"name: sums\ndata: {suite}\nscorers: [contains]\nmatrix:\n  models: [{right}, {half}]\n")
    outcome = evalyard.evaluate(str(path), app=app)
    assert isinstance(outcome, ExperimentOutcome)
    assert [c.label for c in outcome.cells] == [right, half]
    assert [o.result.summary["contains"]["mean"] for o in outcome.outcomes] == [1.0, 0.5]
    cli = json.loads(invoke(app, "run", path, "--json").stdout)
    assert [c["scorers"]["contains"]["mean"] for c in cli["cells"]] == [1.0, 0.5]
    one = evalyard.evaluate(path, app=app, generator_config={"model": half})
    assert one.summary["contains"]["mean"] == 0.5


def test_the_experiment_page_shows_the_grid_and_every_cells_output_per_case(app, suite, models, tmp_path):
    right, half = models
    data = json.loads(invoke(app, "run", suite, "-s", "contains", "-m", right, "-m", half, "--json").stdout)
    page = tmp_path / "grid.html"
    written = invoke(app, "experiments", "report", data["experiment_id"], "-o", page)
    assert written.exit_code == 0, written.output
    html = page.read_text()
    assert html.count('<tr data-cell="') == 2 and 'class="shade down3"' in html  # -0.5 against the baseline
    assert "difference to the baseline -0.5000, 95% CI [" in html  # the interval on hover
    assert html.count('<details class="case') == len(QUESTIONS) and html.count("cells disagree</span>") == 3
    assert "It is unknown." in html and "It is 2." in html  # both cells' outputs, side by side
    assert "default-src 'none'" in html  # self-contained: the page fetches nothing


def test_each_cell_has_the_median_latency_of_its_generation_calls(app, suite, rules):
    """The latency a user means by "how fast is this system": the model under test answering a
    case (each generation call's own time, median over the cell's calls), kept by the cache."""
    slow = rules([{"contains": q, "content": f"It is {a}.", "delay_ms": 120} for q, a in QUESTIONS.values()],
                 name="slow")
    fast = rules([{"contains": q, "content": f"It is {a}."} for q, a in QUESTIONS.values()], name="fast")
    result = invoke(app, "run", suite, "-s", "contains", "-m", slow, "-m", fast, "--epochs", "2", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    latency = [row["latency"] for row in data["comparison"]["cells"]]
    assert [entry["calls"] for entry in latency] == [2 * len(QUESTIONS)] * 2  # every epoch's call
    assert latency[0]["median_ms"] >= 120 > latency[1]["median_ms"]
    text = invoke(app, "experiments", "show", data["experiment_id"]).output
    assert "latency (median)" in text and "latency: the median of the cell's generation calls" in text
    assert f"{latency[0]['median_ms']:,.0f} ms" in text

    again = json.loads(invoke(app, "run", suite, "-s", "contains", "-m", slow, "-m", fast, "--json").stdout)
    cached = again["comparison"]["cells"][0]
    assert cached["cache_hits"] == len(QUESTIONS)  # answered from the cache (epoch 0's calls) ...
    assert cached["latency"]["median_ms"] >= 120  # ... with the latency of the calls that filled it
    shown = json.loads(invoke(app, "experiments", "show", again["experiment_id"], "--json").output)
    assert shown["comparison"]["cells"][0]["latency"] == cached["latency"]


def test_a_candidate_from_the_data_has_no_latency(app, tmp_path):
    from evalyard.store.reading import generation_latency

    path = tmp_path / "given.jsonl"
    path.write_text(json.dumps({"id": "a", "input": "x", "candidate": "y", "reference": "y"}) + "\n")
    data = json.loads(invoke(app, "run", path, "-s", "contains", "--json").stdout)
    store = app.open_store()
    assert generation_latency(store, store.get_run(data["run_id"])) == {"median_ms": None, "calls": 0}


def test_the_experiment_page_shows_every_epoch_and_each_scorers_stability(app, suite, models, rules, tmp_path):
    right, _ = models
    # right on a question's first call, wrong on the next: its two epochs disagree
    flaky = rules([rule for q, a in QUESTIONS.values()
                   for rule in ({"contains": q, "content": f"It is {a}.", "times": 1},
                                {"contains": q, "content": "Maybe later."})], name="flaky")
    data = json.loads(invoke(app, "run", suite, "-s", "contains", "-m", right, "-m", flaky, "--epochs", "2",
                             "--json").stdout)
    rows = data["comparison"]["cells"]
    assert rows[0]["scorers"]["contains"]["epochs"]["unstable"] == 0
    assert rows[1]["scorers"]["contains"]["epochs"]["unstable_share"] == 1.0
    page = tmp_path / "grid.html"
    assert invoke(app, "experiments", "report", data["experiment_id"], "-o", page).exit_code == 0
    html = page.read_text()
    assert html.count('data-stability="contains"') == 2 and "changed 100% · sd 0.707" in html
    assert "the verdict changed on 6 of 6 cases" in html  # on hover
    assert html.count('<tr class="epoch"') == 2 * 2 * len(QUESTIONS)  # each cell's two epochs of every case
    assert html.count("Maybe later.") == len(QUESTIONS) and html.count("changed across epochs</span>") == len(QUESTIONS)
    text = invoke(app, "experiments", "show", data["experiment_id"]).output
    assert "stability across epochs" in text and "6/6 changed (100%), sd 0.707" in text and "0/6 changed (0%)" in text
