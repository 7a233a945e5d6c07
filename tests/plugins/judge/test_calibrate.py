"""`evalyard calibrate`: agreement of a scorer with human labels, through the CLI, the real
store and the scripted judge; the statistics checked against scipy and scikit-learn."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

from evalyard.cli import cli
from evalyard.analysis.agreement import auc, best_threshold, cohen_kappa, folds, pearson, spearman
from testutil import ROOT

EXAMPLE = ROOT / "examples" / "calibrate.jsonl"


def invoke(app, *args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj=app, catch_exceptions=False)


def test_statistics_match_scipy_and_sklearn():
    stats = pytest.importorskip("scipy.stats")
    metrics = pytest.importorskip("sklearn.metrics")
    rng = random.Random(7)
    for _ in range(20):
        xs = [rng.choice([0.0, 0.25, 0.5, 0.75, 1.0]) for _ in range(30)]  # many ties
        ys = [x + rng.gauss(0, 0.4) for x in xs]
        assert pearson(xs, ys) == pytest.approx(stats.pearsonr(xs, ys)[0], abs=1e-12)
        assert spearman(xs, ys) == pytest.approx(stats.spearmanr(xs, ys)[0], abs=1e-12)
        truth = [rng.choice("abc") for _ in range(30)]
        guess = [t if rng.random() < 0.6 else rng.choice("abc") for t in truth]
        assert cohen_kappa(truth, guess) == pytest.approx(metrics.cohen_kappa_score(truth, guess), abs=1e-12)
        positive = [y > 0.5 for y in ys]
        if len(set(positive)) == 2:
            assert auc(xs, positive) == pytest.approx(metrics.roc_auc_score(positive, xs), abs=1e-12)
    assert cohen_kappa(["a", "a"], ["a", "a"]) is None  # undefined, not a made-up number
    assert pearson([1.0, 1.0, 1.0], [0.0, 1.0, 2.0]) is None


def test_folds_are_stratified_and_need_two_of_each_label():
    labels = [True] * 7 + [False] * 3
    assigned = folds(labels)
    assert max(assigned) + 1 == 3  # as many folds as the smaller label has cases
    for fold in range(3):
        assert sum(1 for a, p in zip(assigned, labels) if a == fold and not p) == 1
    assert folds([True, True, True, False]) is None


def test_best_threshold_separates_and_keeps_the_direction():
    values = [0.1, 0.2, 0.4, 0.6, 0.7, 0.9]
    # cuts sit between neighbouring values, so a fitted threshold reads the same with >= and >
    assert best_threshold(values, [False, False, False, True, True, True], ">=") == {
        "threshold": 0.5, "direction": ">=", "accuracy": 1.0, "kappa": 1.0}
    assert best_threshold(values, [True, True, True, False, False, False], "<=")["threshold"] == 0.5
    found = best_threshold(values, [True, True, True, False, False, False])  # either direction
    assert found["direction"] == "<" and found["accuracy"] == 1.0  # positive when value < 0.5: "<", as it predicts
    assert best_threshold(values, [True, True, True, False, False, False], "<") == found


def test_the_example_file_against_the_contains_scorer(app):
    result = invoke(app, "calibrate", EXAMPLE, "--scorer", "contains", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["cases"] == report["compared"] == 46 and report["human_kind"] == "binary"
    labels = report["labels"]
    # in the humans' own words (issue 50: it said no/yes for correct/incorrect labels)
    assert labels["basis"] == "value >= 1" and labels["confusion"] == {"labels": ["correct", "incorrect"],
                                                                        "matrix": [[15, 10], [7, 14]]}
    assert labels["accuracy"] == pytest.approx(29 / 46)
    assert labels["kappa"] == pytest.approx(0.2637, abs=1e-4)
    assert len(report["disagreements"]) == 17
    wrong = {d["id"]: d for d in report["disagreements"]}
    assert wrong["capital-italy-negated"]["human"] == "incorrect" and wrong["capital-italy-negated"]["scorer"] == "correct"
    text = invoke(app, "calibrate", EXAMPLE, "--run", report["run_id"]).output
    assert "accuracy 0.630 [0.478, 0.761], kappa 0.264" in text and "disagreements: 17 (first 10)" in text


QA_RULES = [{"template": "judge/qa_correctness", "contains": "Milan", "content": "ANSWER: incorrect"},
            {"template": "judge/qa_correctness", "contains": "Sydney", "content": "ANSWER: cannot_tell"},
            {"template": "judge/qa_correctness", "content": "It agrees with the context.\nANSWER: correct"}]


def test_a_judges_run_compared_label_by_label(app, rules, tmp_path):
    model = rules(QA_RULES)
    ran = invoke(app, "run", EXAMPLE, "-s", "qa_correctness", "-s", "contains", "--judge-model", model, "--json")
    run_id = json.loads(ran.output)["run_id"]
    result = invoke(app, "calibrate", EXAMPLE, "--run", run_id, "--scorer", "qa_correctness", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    confusion = report["labels"]["confusion"]
    assert report["labels"]["basis"] == "labels"
    assert confusion["labels"] == ["cannot_tell", "correct", "incorrect"]
    assert confusion["matrix"][1] == [0, 25, 0]  # every correct answer judged correct
    assert sum(confusion["matrix"][0]) == 0  # nobody labelled cannot_tell
    reasons = {d["id"]: d["reasoning"] for d in report["disagreements"]}
    assert reasons["moon-landing-wrong"] == "It agrees with the context."  # the reasoning, not the verdict line


def test_a_numeric_scorer_gets_its_best_threshold(app, rules, tmp_path):
    lines = [json.dumps({"id": f"c{n}", "candidate": f"answer {n}", "context": ["source"],
                         "metadata": {"verdict": "fabricated" if n >= 4 else "grounded"}}) for n in range(8)]
    data = tmp_path / "labelled.jsonl"
    data.write_text("\n".join(lines) + "\n")
    model = rules([{"contains": f"answer {n}", "content": f"ANSWER: {score}"}
                   for n, score in enumerate([0, 0, 10, 40, 30, 60, 80, 100])])
    result = invoke(app, "calibrate", data, "-s", "criteria/hallucination", "--judge-model", model,
                    "--label", "verdict", "--positive", "fabricated", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["threshold"]["direction"] == ">=" and report["threshold"]["threshold"] == pytest.approx(0.2)
    assert report["threshold"]["accuracy"] == pytest.approx(7 / 8)
    # the scorer's own threshold 0 (pass when nothing is fabricated) flags c2 and c3 too
    assert report["threshold"]["accuracy_at_scorer_threshold"] == pytest.approx(6 / 8)
    assert report["labels"]["basis"] == "value > 0" and report["labels"]["accuracy"] == pytest.approx(6 / 8)
    values, fabricated = [0, 0, 0.1, 0.4, 0.3, 0.6, 0.8, 1.0], [0, 0, 0, 0, 1, 1, 1, 1]  # correlated with fabricated = 1
    assert report["correlation"] == {"n": 8, "pearson": pytest.approx(pearson(values, fabricated)),
                                     "spearman": pytest.approx(spearman(values, fabricated))}


def test_bad_usage_and_bad_input_are_one_line_and_exit_2(app, tmp_path):
    unlabelled = tmp_path / "plain.jsonl"
    unlabelled.write_text(json.dumps({"id": "a", "candidate": "x", "reference": "x"}) + "\n")
    for args in ([unlabelled, "-s", "contains"], [EXAMPLE], [EXAMPLE, "--run", "nope"]):
        result = invoke(app, "calibrate", *args)
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert result.exit_code == 2 and len(lines) == 1, result.output
    assert "plain.jsonl" in invoke(app, "calibrate", unlabelled, "-s", "contains").output
    both = json.loads(invoke(app, "run", EXAMPLE, "-s", "contains", "-s", "exact_match", "--json").output)
    result = invoke(app, "calibrate", EXAMPLE, "--run", both["run_id"])
    assert result.exit_code == 2 and "choose one with --scorer" in result.output
