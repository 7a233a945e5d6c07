"""The report's retrieval views without a browser: a case's passages in trec_eval's order with
their ranks, grades and per-passage verdicts in the page's data, and the "retrieval at k" charts
of a run and of a grid's cells."""

from __future__ import annotations

import json
import random
import re

import pytest
from click.testing import CliRunner

from evalyard.cli import cli
from evalyard.report import build_report
from evalyard.report.charts import at_k_svg
from evalyard.report.data import at_k_measures, ranking_view
from evalyard.retrieval import ranked_passages

#: Scores with ties (d10/d9/d2 share 0.5: ids descending as bytes, so "d9" > "d2" > "d10"),
#: listed out of order; d3 is judged not relevant, d9 relevant with grade 2, d7 relevant and
#: not retrieved.
RETRIEVED = [{"id": "d10", "text": "ten", "score": 0.5}, {"id": "d1", "text": "one " * 200, "score": 0.9},
             {"id": "d2", "text": "two", "score": 0.5}, {"id": "d9", "text": "nine", "score": 0.5},
             {"id": "d3", "text": "three", "score": 0.1}]
RELEVANT = {"d9": 2, "d1": 1, "d3": 0, "d7": 1}
ORDER = ["d1", "d9", "d2", "d10", "d3"]


def _data(html: str):
    match = re.search(r'<script type="application/json" id="evalyard-data">(.*?)</script>', html, re.S)
    return json.loads(match.group(1))


def test_passages_are_ranked_as_trec_eval_ranks_them():
    assert [p["id"] for p in ranked_passages(RETRIEVED)] == ORDER
    unscored = [{"id": "b"}, {"id": "a"}, {"id": "c"}]
    assert ranked_passages(unscored) == unscored  # no scores: the list's own order
    # the retrieval plugin's ranking (the one its scorers use) agrees on random rankings with ties
    from evalyard_retrieval.measures import ranked

    rng = random.Random(49)
    for _ in range(200):
        docs = [{"id": rng.choice(["d", "D", "é", "doc"]) + str(n), "score": rng.choice([0.1, 0.5, 0.5, 1.0])}
                for n in range(rng.randint(1, 12))]
        assert [p["id"] for p in ranked_passages(docs)] == ranked([(p["id"], p["score"]) for p in docs])


def test_ranking_view_carries_rank_score_text_and_grade():
    view = ranking_view(RETRIEVED, RELEVANT)
    assert [(p["rank"], p["id"]) for p in view] == list(enumerate(ORDER, start=1))
    assert view[0] == {"rank": 1, "id": "d1", "score": 0.9, "text": "one " * 200, "grade": 1}
    assert view[1]["grade"] == 2 and "grade" not in view[2] and view[4]["grade"] == 0
    assert ranking_view(None, RELEVANT) is None


@pytest.fixture
def retrieval_run(app, tmp_path):
    suite = tmp_path / "ret.jsonl"
    cases = [{"id": "q1", "input": "which?", "retrieved": RETRIEVED, "relevant": RELEVANT,
              "reference_contexts": ["nine"]},
             {"id": "q2", "input": "and which?", "retrieved": [{"id": "x", "text": "ex", "score": 1.0}],
              "relevant": ["x"], "reference_contexts": ["ex"]},
             {"id": "q3", "input": "context only", "context": ["first passage", "second passage"],
              "relevant": ["2"], "reference_contexts": ["second passage"]}]
    suite.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    result = CliRunner().invoke(cli, ["run", str(suite), "-s", "recall@1", "-s", "recall@2", "-s", "recall@5",
                                      "-s", "ndcg@5", "-s", "non_llm_context_precision", "--name", "ret", "--json"],
                                obj=app, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)["run_id"]


def test_report_data_holds_the_ranked_passages_and_verdicts(app, retrieval_run):
    store = app.open_store()
    html = build_report(store, retrieval_run)
    data = _data(html)
    cases = data["cases"]
    q1 = cases["id"].index("q1")
    assert [p["id"] for p in cases["retrieved"][q1]] == ORDER
    assert [p.get("grade") for p in cases["retrieved"][q1]] == [1, 2, None, None, 0]
    assert cases["relevant"][q1] == RELEVANT and cases["reference_contexts"][q1] == ["nine"]
    # the per-passage verdicts a scorer gives are in the same (rank) order: only d9 matches "nine"
    verdicts = data["results"]["non_llm_context_precision"]["d"][str(q1)]["verdicts"]
    assert verdicts == [0, 1, 0, 0, 0]
    q3 = cases["id"].index("q3")
    assert cases["retrieved"][q3] is None and cases["context"][q3] == ["first passage", "second passage"]


def test_run_page_charts_each_measure_at_its_cutoffs(app, retrieval_run):
    store = app.open_store()
    html = build_report(store, retrieval_run)
    section = re.search(r'<section id="retrieval-at-k".*?</section>', html, re.S).group(0)
    charts = re.findall(r'<svg class="chart at-k" data-measure="([^"]+)".*?</svg>', section, re.S)
    assert charts == ["recall"]  # ndcg@5 alone is no curve; non_llm_context_precision has no k
    points = re.findall(r'<g class="point" data-k="(\d+)" data-mean="([^"]+)"', section)
    stats = store.get_run(retrieval_run).totals["scorers"]
    assert [(int(k), float(m)) for k, m in points] == [
        (k, pytest.approx(stats[f"recall@{k}"]["mean"], abs=1e-5)) for k in (1, 2, 5)]
    assert section.count('class="interval"') == 3 * 3  # each point's interval: a bar and two ends


def test_no_at_k_section_without_several_cutoffs(app, tmp_path):
    suite = tmp_path / "one.jsonl"
    suite.write_text(json.dumps({"id": "a", "input": "x", "retrieved": ["p"], "relevant": ["1"]}) + "\n")
    result = CliRunner().invoke(cli, ["run", str(suite), "-s", "recall@1", "-s", "ndcg@3", "--json"], obj=app,
                                catch_exceptions=False)
    html = build_report(app.open_store(), json.loads(result.stdout)["run_id"])
    assert 'id="retrieval-at-k"' not in html


def test_at_k_measures_group_names_by_measure():
    names = ["recall@10", "ndcg@5", "recall@1", "map", "ndcg@10", "p@5", "recall@5"]
    assert at_k_measures(names) == {"recall": [(1, "recall@1"), (5, "recall@5"), (10, "recall@10")],
                                    "ndcg": [(5, "ndcg@5"), (10, "ndcg@10")]}


def test_at_k_chart_draws_one_line_per_series():
    series = [{"label": f"cell {n}", "points": [{"k": k, "mean": 0.1 * k + n / 10, "ci95": [0.05 * k, 0.12 * k]}
                                                for k in (1, 3, 5)]} for n in range(2)]
    svg = at_k_svg("recall", series)
    assert svg.count('<g class="series"') == 2 and svg.count('<polyline') == 2
    assert svg.count('<g class="point"') == 6 and "cell 1" in svg


def test_grid_page_compares_the_cells_by_k(app, rules, tmp_path):
    suite = tmp_path / "grid.jsonl"
    suite.write_text("".join(json.dumps({"id": f"q{n}", "input": f"question {n}", "retrieved": RETRIEVED,
                                         "relevant": RELEVANT}) + "\n" for n in range(3)), encoding="utf-8")
    models = [rules([{"contains": "question", "content": "an answer"}], name=name) for name in ("a", "b")]
    result = CliRunner().invoke(cli, ["run", str(suite), "-s", "recall@1", "-s", "recall@3", "-s", "recall@5",
                                      "-m", models[0], "-m", models[1], "--name", "grid", "--json"],
                                obj=app, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    from evalyard.report.experiment import build_experiment_report

    html = build_experiment_report(app.open_store(), json.loads(result.stdout)["experiment_id"])
    section = re.search(r'<section class="panel" id="retrieval-at-k">.*?</section>', html, re.S).group(0)
    assert section.count('<g class="series"') == 2 and section.count('<g class="point"') == 6
