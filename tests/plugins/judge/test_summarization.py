"""Ragas' summarization score reproduces the reference data (ragas 0.4.3, scripted LLM answers)
for both the legacy and the new length-penalty behaviour, through the scripted model."""

from __future__ import annotations

import json

import pytest

from evalyard import Case
from evalyard_judge.ragas import SummarizationScore, combined_score, conciseness_score

from testutil import REFERENCE_DATA

REFERENCE = REFERENCE_DATA / "ragas" / "summary_score_golden.jsonl"
ROWS = [json.loads(line) for line in REFERENCE.read_text().splitlines()]


def scripted_answers(row):
    """The LLM answers of the reference run, one rule per step (matched by template name)."""
    script = row["llm_script"]
    return [{"template": f"judge/summarization_{step}", "content": {step: script[step]}}
            for step in ("keyphrases", "questions", "answers")]


def case_of(row):
    return Case(id=row["id"], candidate=row["response"], context=row["reference_contexts"])


@pytest.mark.parametrize("compat,key", [("current", "modern_score"), ("legacy", "legacy_score")])
@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_reproduces_the_reference(row, compat, key, rules, score):
    model = rules(scripted_answers(row))
    scorer = SummarizationScore(model=model, coeff=row["coeff"], length_penalty=row["length_penalty"], compat=compat)
    [result] = score(scorer, case_of(row))
    expected = row[key]
    parts = row["formula_parts"]
    assert result.details["len_text"] == parts["len_text"] and result.details["len_summary"] == parts["len_summary"]
    assert result.details["conciseness_score"] == pytest.approx(parts["conciseness_score"], abs=1e-9)
    if isinstance(expected, dict):  # ragas raised: a recorded error, never a 0
        assert expected["error_type"] == "ZeroDivisionError"
        assert result.value is None and "no questions" in result.error
        assert result.details["questions"] == []
    else:
        assert result.error is None, result.error
        assert abs(result.value - expected) <= 1e-9
        assert result.details["qa_score"] == pytest.approx(parts["qa_score"], abs=1e-12)
        assert result.details["questions"] == row["llm_script"]["questions"]
        assert result.usage["calls"] == 3


def test_the_documented_example():
    # ragas' documentation: 310-character text, 183-character summary, 7 of 8 questions answered
    conciseness = conciseness_score("x" * 310, "y" * 183)
    value = combined_score(7 / 8, conciseness, coeff=0.5, length_penalty=True, compat="current")
    assert abs(value - 0.6423387096775146) <= 1e-9


def test_coeff_weights_conciseness_as_ragas_code_does():
    assert combined_score(1.0, 0.0, coeff=0.8, length_penalty=True, compat="current") == pytest.approx(0.2)
    assert combined_score(1.0, 0.0, coeff=0.8, length_penalty=False, compat="legacy") == pytest.approx(0.2)
    assert combined_score(1.0, 0.0, coeff=0.8, length_penalty=False, compat="current") == 1.0


def test_answers_are_counted_exactly_and_malformed_ones_reported(rules, score):
    model = rules([{"template": "judge/summarization_keyphrases", "content": {"keyphrases": ["Oslo"]}},
                   {"template": "judge/summarization_questions", "content": {"questions": ["a?", "b?", "c?", "d?"]}},
                   {"template": "judge/summarization_answers", "content": {"answers": ["1", "YES", " 1", "0"]}}])
    scorer = SummarizationScore(model=model, length_penalty=False)
    [result] = score(scorer, Case(id="c", candidate="Oslo is a city.", context=["Oslo is the capital of Norway."]))
    assert result.value == 0.25 and result.details["malformed_answers"] == 2


def test_an_unreadable_step_is_a_recorded_error_with_the_raw_reply(rules, score):
    model = rules([{"template": "judge/summarization_keyphrases", "content": "I cannot do that."}])
    [result] = score(SummarizationScore(model=model), Case(id="c", candidate="s", context=["text"]))
    assert result.value is None and result.error.startswith("keyphrases:")
    assert result.details["raw"] == "I cannot do that."  # the reply to the one repair call


def test_empty_text_or_summary_is_an_error_without_a_call(rules, score):
    model = rules([{"error": 500}])
    empty_summary, empty_text = score(SummarizationScore(model=model), Case(id="a", candidate="  ", context=["t"]),
                                      Case(id="b", candidate="s", context=["  "]))
    assert "summary is empty" in empty_summary.error and "context is empty" in empty_text.error


def test_samples_average_and_report_spread(rules, score):
    model = rules([{"template": "judge/summarization_keyphrases", "content": {"keyphrases": ["Oslo"]}},
                   {"template": "judge/summarization_questions", "content": {"questions": ["a?", "b?"]}},
                   {"template": "judge/summarization_answers", "content": {"answers": ["1", "0"]}, "times": 1},
                   {"template": "judge/summarization_answers", "content": {"answers": ["1", "1"]}}])
    scorer = SummarizationScore(model=model, samples=2, length_penalty=False)
    [result] = score(scorer, Case(id="c", candidate="Oslo.", context=["Oslo is the capital of Norway."]))
    assert result.value == 0.75 and result.details["spread"] == 0.5 and result.details["answered"] == 2


def test_coeff_outside_0_1_is_a_config_error():
    from evalyard import ConfigError

    with pytest.raises(ConfigError, match="coeff"):
        SummarizationScore(coeff=1.5)
