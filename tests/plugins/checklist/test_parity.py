"""Parity with AutoChecklist 0.2.3: each reference record's judge replies, scripted, through the real
scorer, model layer (litellm + the scripted provider) and store, give the original's numbers."""

from __future__ import annotations

import json

import pytest

import evalyard
from checklist_helpers import REFERENCE, case_for, reference_checklist, reference_records, scorer_config, scripted_rules
from evalyard_checklist.parsing import confidence_level, interpret_probs, parse_yes_no_answers

RECORDS = reference_records()
AGGREGATES = ("pass_rate", "weighted_score", "normalized_score", "primary_score", "scaled_score_1_5")


def run_record(app, rules, record, **extra):
    checklist = reference_checklist(record["checklist_id"])
    model = rules(scripted_rules(record, checklist))
    run = evalyard.evaluate([case_for(record, checklist)],
                            [{"name": "checklist", "config": scorer_config(record, **extra)}],
                            app=app, judge_model=model)
    (result,) = run.results
    return run, result


@pytest.mark.parametrize("record", RECORDS, ids=[r["case"] for r in RECORDS])
def test_missing_no_reproduces_the_original(app, rules, record):
    run, result = run_record(app, rules, record, missing="no")
    if "error" in record:
        assert result["error"] is not None and result["value"] is None
        assert "Input should be 'YES' or 'NO'" in result["error"]
        assert result["details"]["raw_response"] == record["mock_responses"][0]["choices"][0]["message"]["content"]
        return
    expected = record["score"]
    assert result["error"] is None, result["error"]
    details = result["details"]
    for key in AGGREGATES:
        assert details[key] == pytest.approx(expected[key], abs=1e-9), key
    assert result["value"] == pytest.approx(expected["primary_score"], abs=1e-9)
    assert details["primary_metric"] == expected["primary_metric"]
    assert details["scoring_method"] == expected["scoring_method"]
    items = details["items"]
    assert [i["id"] for i in items] == [s["item_id"] for s in expected["item_scores"]]
    for got, want in zip(items, expected["item_scores"]):
        assert got["answer"] == want["answer"]
        assert got["reasoning"] == want["reasoning"]
        assert got["confidence_level"] == want["confidence_level"]
        if want["confidence"] is None:
            assert got["confidence"] is None
        else:
            assert got["confidence"] == pytest.approx(want["confidence"], abs=1e-9)
    if "num_calls" in expected["metadata"]:
        assert details["num_calls"] == expected["metadata"]["num_calls"]
        assert (result["usage"] or {}).get("calls", 0) == expected["metadata"]["num_calls"]
    else:
        assert details["raw_response"] == expected["metadata"]["raw_response"]
    assert run.usage is None or run.usage["calls"] == len(record["mock_responses"])


def _by_case(name):
    return next(r for r in RECORDS if r["case"] == name)


@pytest.mark.parametrize("name", ["cl4-missing-index", "cl4-out-of-range-index", "cl4-empty-answers"])
def test_by_default_an_unanswered_item_is_the_cases_error_not_a_silent_no(app, rules, name):
    _, result = run_record(app, rules, _by_case(name))
    assert result["value"] is None and "unanswered" in result["error"] and "missing=no" in result["error"]
    unanswered = result["details"]["unanswered"]
    assert unanswered and all(i["answer"] is None for i in result["details"]["items"] if i["id"] in unanswered)


def test_by_default_lowercase_answers_are_read(app, rules):
    _, result = run_record(app, rules, _by_case("cl4-lowercase-yes"))
    assert result["error"] is None
    assert [i["answer"] for i in result["details"]["items"]] == ["yes", "no", "yes"]
    assert result["value"] == pytest.approx(2 / 3)


def test_by_default_logprobs_without_yes_or_no_fall_back_to_the_text_or_are_unanswered(app, rules):
    _, result = run_record(app, rules, _by_case("cl3-rocketeval-logprobs"))
    items = {i["id"]: i for i in result["details"]["items"]}
    # "Maybe" with only "Maybe"/"The" among the top tokens: no answer at all.
    assert result["error"] is not None and result["details"]["unanswered"] == ["cl3-q6"]
    # "Yes" without logprobs: the text answer, no confidence (the original says 0.5 / NO).
    assert items["cl3-q8"]["answer"] == "yes" and items["cl3-q8"]["confidence"] is None
    assert items["cl3-q8"]["confidence_source"].startswith("text")


def test_confidence_thresholds_are_reproduced_exactly():
    data = json.loads((REFERENCE / "confidence_thresholds.json").read_text())
    for confidence, want in data["confidence_to_level"].items():
        assert confidence_level(float(confidence)) == (want["answer"], want["level"]), confidence
    for probs, want in data["interpret_probs"].items():
        read = interpret_probs(json.loads(probs)) or (0.5, "no", "unsure")
        assert read[0] == pytest.approx(want[0], abs=1e-12) and list(read[1:]) == want[1:], probs


def test_the_line_parser_matches_the_original():
    data = json.loads((REFERENCE / "parse_yes_no_answers.json").read_text())
    for text, want in data["results"].items():
        assert [list(t) for t in parse_yes_no_answers(text)] == want, text
