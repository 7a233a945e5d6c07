"""Issue 35 item 1: every agreement figure is the one at the threshold in use, held out when fitted,
with its interval, n and calibration; fixes 1-9 of "Figures that mislead". Through the CLI, a real
database and scripted judges (examples/labelled and small files of their own)."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from evalyard.cli import cli
from testutil import ROOT

LABELLED = ROOT / "examples" / "labelled"


def invoke(app, *args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj=app, catch_exceptions=False)


def lp(p: float) -> dict[str, float]:
    return {"yes": math.log(p), "no": math.log(1 - p)}


def write(tmp_path, name, rows):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def correctness(tmp_path, n=20):
    return write(tmp_path, "labelled.jsonl", [
        {"id": f"c{k:02d}", "input": f"question {k:02d}", "reference": "the reference", "candidate": f"answer {k:02d}",
         "metadata": {"human_label": "correct" if k % 2 == 0 else "incorrect"}} for k in range(n)])


def judge(rules, p_yes):
    return rules([{"contains": f"answer {k:02d}", "content": "yes" if p >= 0.5 else "no", "logprobs": lp(p)}
                   for k, p in p_yes.items()])


#: Ranks the 20 answers perfectly, but every P(yes) of a correct answer sits between 0.3 and 0.5.
SHY = {k: (0.30 + 0.01 * k if k % 2 == 0 else 0.05 + 0.01 * k) for k in range(20)}
SCORER = "criteria/correctness:logprobs=true"


def test_a_run_shows_the_figure_at_its_own_threshold_with_interval_and_calibration(app, rules, tmp_path):
    data, model = correctness(tmp_path), judge(rules, SHY)
    saved = json.loads(invoke(app, "calibrate", data, "-s", SCORER, "--judge-model", model, "--save", "--json").output)
    at = saved["at_threshold"]
    assert at["accuracy"] == 0.5 and at["n"] == 20 and at["accuracy_ci"][0] < 0.5 < at["accuracy_ci"][1]
    assert saved["threshold"]["held_out"]["accuracy"] == 1.0 and saved["auc_ci"] == [1.0, 1.0]
    plain = invoke(app, "run", data, "-s", SCORER, "--judge-model", model).output
    line = next(x for x in plain.splitlines() if "agrees with people" in x)
    # the run's own threshold: half right, with its interval, not the fitted threshold's 1.0
    assert "accuracy 0.50 [" in line and "on 20 labelled cases at its labels" in line
    assert f"(calibration {saved['saved']}, " in line and "labelled.jsonl" in line
    # 20 of 20 held out: the Wilson interval (issue 50), not the bootstrap's zero-width [1.00, 1.00]
    assert "its calibrated threshold" in line and "gets accuracy 1.00 [0.84, 1.00]" in line
    assert "judge card: AUC 1.00 [1.00, 1.00]" in plain
    # the same judge with a threshold of its own gets the figure at that threshold, from the saved points
    other = json.loads(invoke(app, "run", data, "-s", f"{SCORER},threshold=0.3", "--judge-model", model,
                              "--json").output)
    mine = other["scorers"]["criteria/correctness"]["agreement"]
    truth = [k % 2 == 0 for k in range(20)]
    assert mine["basis"] == "value >= 0.3"
    assert mine["accuracy"] == pytest.approx(sum((SHY[k] >= 0.3) == truth[k] for k in range(20)) / 20)


def test_runs_show_keeps_the_calibration_the_run_used(app, rules, tmp_path):
    data, model = correctness(tmp_path), judge(rules, SHY)
    first = json.loads(invoke(app, "calibrate", data, "-s", SCORER, "--judge-model", model, "--save",
                              "--json").output)["saved"]
    run = json.loads(invoke(app, "run", data, "-s", SCORER, "--judge-model", model, "--json").output)["run_id"]
    smaller = write(tmp_path, "smaller.jsonl", [json.loads(x) for x in data.read_text().splitlines()[:12]])
    second = json.loads(invoke(app, "calibrate", smaller, "-s", SCORER, "--judge-model", model, "--save",
                               "--json").output)["saved"]
    assert second != first
    shown = json.loads(invoke(app, "runs", "show", run, "--json").output)
    view = shown["scorers"]["criteria/correctness"]["agreement"]
    assert view["calibration_id"] == first and view["n"] == 20
    assert f"(calibration {first}, " in invoke(app, "runs", "show", run).output
    newer = json.loads(invoke(app, "run", data, "-s", SCORER, "--judge-model", model, "--json").output)
    assert newer["scorers"]["criteria/correctness"]["agreement"]["calibration_id"] == second


def test_calibrated_refuses_a_reversed_threshold_loudly(app, rules, tmp_path):
    data = correctness(tmp_path)
    model = judge(rules, {k: 1 - p for k, p in SHY.items()})  # the values run against the labels
    invoke(app, "calibrate", data, "-s", SCORER, "--judge-model", model, "--save")
    ran = CliRunner().invoke(cli, ["run", str(data), "-s", SCORER, "--judge-model", model, "--calibrated"], obj=app)
    assert ran.exit_code == 0, ran.output
    assert "NOT applied" in ran.output and "positive when value <" in ran.output
    line = next(x for x in ran.output.splitlines() if "agrees with people" in x)
    assert "--calibrated does not apply it" in line and "run --calibrated)" not in line


def test_calibrated_warns_when_its_held_out_estimate_is_below_the_majority_baseline(app, rules, tmp_path):
    data = correctness(tmp_path)
    # a judge that knows nothing: its fitted threshold does worse than always saying one label, held out
    noise = dict(enumerate([0.26, 0.54, 0.38, 0.59, 0.61, 0.11, 0.06, 0.8, 0.28, 0.26, 0.95, 0.47, 0.8, 0.48, 0.63,
                            0.19, 0.62, 0.83, 0.52, 0.72]))
    model = judge(rules, noise)
    report = json.loads(invoke(app, "calibrate", data, "-s", SCORER, "--judge-model", model, "--save",
                               "--json").output)
    held, majority = report["threshold"]["held_out"], report["baselines"]["majority class"]["held_out"]
    assert report["threshold"]["direction"] == ">=" and held["accuracy"] < majority["accuracy"]
    ran = CliRunner().invoke(cli, ["run", str(data), "-s", SCORER, "--judge-model", model, "--calibrated"], obj=app)
    assert "below the majority-class baseline" in ran.output
    assert "WARNING: no better than a no-model baseline" in ran.output


def test_pairwise_calibrate_counts_ties_as_misses_and_finds_its_positive_label(app, rules):
    # position-bound: "second" in both orders (a split), except two pairs it calls a tie
    model = rules([{"template": "judge/pairwise", "contains": "Canberra", "content": "tie"},
                   {"template": "judge/pairwise", "contains": "Jane Austen", "content": "tie"},
                   {"template": "judge/pairwise", "content": "second"}])
    data = LABELLED / "pairwise.jsonl"
    report = json.loads(invoke(app, "calibrate", data, "-s", "pairwise", "--judge-model", model, "--json").output)
    assert report["positive_label"] == "candidate"  # without --positive
    assert report["threshold"] is not None and report["baselines"] is not None
    pairwise = report["pairwise"]
    assert pairwise["decided"] == 0 and pairwise["ties_or_splits"] == 12 and report["at_threshold"]["accuracy"] == 0
    # both orders agree only on the two ties: the definition compare uses too
    assert pairwise["position_consistency"] == pytest.approx(2 / 12)
    text = invoke(app, "calibrate", data, "--run", report["run_id"], "--show", "0").output
    assert "picked a side in 0 of 12 pairs" in text and "scorer's own threshold" not in text
    assert "human equal" not in text and "human inconsistent" not in text  # rows no person used
    assert "always either label (balanced)" in text
    assert "disagreements: 12 (--show N lists them)" in text and "case  human" not in text


def test_value_from_a_list_in_details_and_hallucinations_graded_value(app, rules):
    rows = [json.loads(x) for x in (LABELLED / "faithfulness.jsonl").read_text().splitlines()]
    p_yes = {r["id"]: (0.4 + 0.02 * n if r["metadata"]["human_label"] == "faithful" else 0.1 + 0.02 * n)
             for n, r in enumerate(rows)}
    model = rules([rule for r in rows for rule in (
        {"template": "judge/hallucination_claims", "contains": r["candidate"], "content": {"claims": [r["candidate"]]}},
        {"template": "judge/hallucination_check", "contains": r["candidate"],
         "content": "yes" if p_yes[r["id"]] >= 0.5 else "no", "logprobs": lp(p_yes[r["id"]])})])
    data = LABELLED / "faithfulness.jsonl"
    auto = json.loads(invoke(app, "calibrate", data, "-s", "judge/hallucination:logprobs=true", "--judge-model", model,
                             "--json").output)
    assert auto["value"] == "calibration_value" and auto["auc"] is not None
    assert auto["positive_label"] == "unfaithful"  # the scorer's first label is hallucination, high value
    listed = json.loads(invoke(app, "calibrate", data, "--run", auto["run_id"], "--value", "details.claims.0.p_yes",
                               "--json").output)
    assert listed["auc"] is not None and listed["threshold"] is not None
    bad = invoke(app, "calibrate", data, "--run", auto["run_id"], "--value", "details.claims.7.p_yes")
    assert bad.exit_code == 2 and len(bad.output.strip().splitlines()) == 1 and "details.claims.7.p_yes" in bad.output


def test_claims_get_a_claim_vs_evidence_overlap_baseline(rules, monkeypatch):
    from evalyard import Application

    monkeypatch.setenv("EVALYARD_LOAD_PLUGINS", "judge,criteria,lexicon,trust")
    app = Application()
    rows = [json.loads(x) for x in (LABELLED / "claims.jsonl").read_text().splitlines()]
    model = rules([{"template": "trust/entailment", "contains": r["metadata"]["answers"][0][0], "content": "yes",
                    "logprobs": lp(0.6 if n % 3 else 0.4)} for n, r in enumerate(rows)])
    report = json.loads(invoke(app, "calibrate", LABELLED / "claims.jsonl", "-s",
                               "trust_correctness:mode=cm,entailment=judge,entailment_answer=logprobs",
                               "--judge-model", model, "--json").output)
    overlap = report["baselines"]["word overlap of claim with evidence"]
    # the claim against its evidence: values that vary (the evidence against itself was always 1.0); on
    # these hand-made pairs, written so that word overlap does not give the answer away, it ranks at chance
    assert overlap["accuracy"] == 0.625 and overlap["auc"] == pytest.approx(0.528, abs=1e-3)
    assert "word overlap with context/reference" not in report["baselines"]


def test_the_judge_card_gives_self_consistency_when_the_judge_is_sampled(app, rules, tmp_path):
    data = correctness(tmp_path, n=8)
    # each answer: "yes" once, then "no": three samples agree 2 to 1
    model = rules([rule for k in range(8) for rule in (
        {"contains": f"answer {k:02d}", "content": "ANSWER: yes", "times": 1},
        {"contains": f"answer {k:02d}", "content": "ANSWER: no"})])
    report = json.loads(invoke(app, "calibrate", data, "-s", "criteria/correctness:samples=3", "--judge-model", model,
                               "--save", "--json").output)
    card = report["card"]
    assert card["self_consistency"] == pytest.approx(2 / 3) and card["position_consistency"] is None
    assert card["scorer"] == "criteria/correctness" and card["model"] == model and card["template"]
    one = json.loads(invoke(app, "calibrate", data, "-s", "criteria/correctness", "--judge-model", model,
                            "--json").output)["card"]
    assert one["self_consistency"] is None and "samples=N" in one["self_consistency_note"]
    ran = invoke(app, "run", data, "-s", "criteria/correctness:samples=3", "--judge-model", model).output
    assert "judge card: AUC" in ran and "self-consistency 0.67" in ran


def test_compare_and_calibrate_count_position_inconsistency_alike(app, rules, tmp_path):
    rows = [json.loads(x) for x in (LABELLED / "pairwise.jsonl").read_text().splitlines()]
    # Canberra first: a tie; Canberra second: it wins. The orders disagree (a tie, then a side), though the
    # scorer's label is a side (candidate): both commands must count that pair as position-inconsistent.
    model = rules([{"template": "judge/pairwise", "regex": r"First response:\n<data-\w+>\nCanberra", "content": "tie"},
                   {"template": "judge/pairwise", "contains": "Canberra", "content": "second"},
                   {"template": "judge/pairwise", "content": "second"}])
    report = json.loads(invoke(app, "calibrate", LABELLED / "pairwise.jsonl", "-s", "pairwise", "--judge-model", model,
                               "--json").output)
    base = write(tmp_path, "base.jsonl", [{**r, "candidate": r["reference"], "reference": "x"} for r in rows])
    new = write(tmp_path, "new.jsonl", [{**r, "reference": "x"} for r in rows])
    ids = [json.loads(invoke(app, "run", f, "-s", "exact_match", "--json").output)["run_id"] for f in (base, new)]
    compared = json.loads(invoke(app, "compare", *ids, "--judge", "pairwise", "--judge-model", model, "--json").output)
    inconsistent = compared["pairwise"]["position_inconsistent"]
    assert inconsistent == pytest.approx(12 / 12)
    assert report["pairwise"]["position_consistency"] == pytest.approx(1 - inconsistent)
    # the scorer's label for that pair is the side it picked (right, so no disagreement): counting labels
    # named "inconsistent", as calibrate did, would have missed it
    assert "what-is-the-capital-of-australia" not in {d["id"] for d in report["disagreements"]}


def test_the_judge_row_of_the_baseline_table_is_always_held_out(app, rules, tmp_path):
    """Issue 43: "the judge" row of calibrate's baseline table was the higher of the figure at the
    judge's own threshold and its fitted threshold's held-out figure, so on some sets held-out
    baselines were compared with a figure nothing was held out of. It is the held-out figure
    whenever a threshold was fitted, named as such, with its interval."""
    data = correctness(tmp_path)
    # a judge that knows nothing: 0.55 at its own threshold, 0.20 for its fitted threshold held out
    noise = dict(enumerate([0.26, 0.54, 0.38, 0.59, 0.61, 0.11, 0.06, 0.8, 0.28, 0.26, 0.95, 0.47, 0.8, 0.48, 0.63,
                            0.19, 0.62, 0.83, 0.52, 0.72]))
    model = judge(rules, noise)
    report = json.loads(invoke(app, "calibrate", data, "-s", SCORER, "--judge-model", model, "--json").output)
    held, at = report["threshold"]["held_out"], report["at_threshold"]
    assert at["accuracy"] == 0.55 and held["accuracy"] == 0.2
    assert report["judge_accuracy"] == held["accuracy"]
    assert report["judge_figure"]["basis"] == "fitted threshold, 5-fold cross-validation"
    # the warnings compare like with like: every held-out baseline (0.50) beats the held-out judge
    assert "majority class beats the judge: accuracy 0.500 vs 0.200" in report["baseline_verdicts"]
    plain = invoke(app, "calibrate", data, "-s", SCORER, "--judge-model", model).output
    row = next(x for x in plain.splitlines() if x.startswith("the judge"))
    assert "fitted threshold, 5-fold cross-validation" in row and "0.200 [0.050, 0.400]" in row and "-0.600" in row



def test_a_pairwise_judge_on_few_pairs_gets_intervals_that_are_not_zero_wide(app, rules, tmp_path):
    """Issue 50: 8 pairs, every verdict a position-bound split: accuracy and position consistency are
    0 of 8, whose interval is the Wilson one compare uses, not the bootstrap's [0, 0]."""
    from evalyard.analysis.stats import wilson_ci

    data = tmp_path / "pairs.jsonl"
    data.write_text("".join((LABELLED / "pairwise.jsonl").read_text().splitlines(keepends=True)[:8]))
    model = rules([{"template": "judge/pairwise", "content": "second"}])
    report = json.loads(invoke(app, "calibrate", data, "-s", "pairwise", "--judge-model", model, "--json").output)
    pairwise = report["pairwise"]
    assert (pairwise["n"], pairwise["accuracy"], pairwise["position_consistency"]) == (8, 0.0, 0.0)
    low, high = wilson_ci(0, 8)
    assert pairwise["accuracy_ci"] == pairwise["position_consistency_ci"] == [low, high] and high > 0.3
    text = invoke(app, "calibrate", data, "--run", report["run_id"], "--show", "0").output
    assert f"accuracy 0.000 [0.000, {high:.3f}]" in text and f"position consistency 0.000 [0.000, {high:.3f}]" in text
    assert "[0.000, 0.000]" not in text.split("kappa")[0]


def test_the_confusion_matrix_names_the_humans_labels(app, tmp_path):
    """A scorer with no labels of its own (contains, cut at its threshold) against correct/incorrect
    labels: rows and columns in the humans' words, not yes/no."""
    data = write(tmp_path, "answers.jsonl", [
        {"id": f"c{k:02d}", "input": f"question {k:02d}", "reference": "the answer",
         "candidate": "the answer" if k % 3 else "something else",
         "metadata": {"human_label": "correct" if k % 2 == 0 else "incorrect"}} for k in range(12)])
    report = json.loads(invoke(app, "calibrate", data, "-s", "contains", "--json").output)
    assert report["labels"]["confusion"]["labels"] == ["correct", "incorrect"]
    text = invoke(app, "calibrate", data, "--run", report["run_id"], "--show", "0").output
    assert "human correct" in text and "human incorrect" in text
    assert "human yes" not in text and "human no " not in text
