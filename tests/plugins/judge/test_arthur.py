"""Arthur Bench's judges, corrected: qa_correctness's cannot_tell, summary_quality in both
orders, hallucination claim by claim -- through the scripted model behind litellm."""

from __future__ import annotations

import pytest

import evalyard
from evalyard import Case
from evalyard_judge.arthur import Hallucination, QACorrectness, SummaryQuality

QA = [Case(id="right", input="Where is the Eiffel Tower?", candidate="In Paris.",
           context=["The Eiffel Tower stands in Paris."]),
      Case(id="wrong", input="Where is the Eiffel Tower?", candidate="In Lyon.",
           context=["The Eiffel Tower stands in Paris."]),
      Case(id="unsure", input="How tall is the Eiffel Tower?", candidate="About 330 metres.",
           context=["The Eiffel Tower stands in Paris."])]
QA_RULES = [{"template": "judge/qa_correctness", "contains": "Lyon", "content": "It says Lyon.\nANSWER: incorrect"},
            {"template": "judge/qa_correctness", "contains": "330", "content": "No height given.\nANSWER: cannot_tell"},
            {"template": "judge/qa_correctness", "content": "Matches the context.\nANSWER: correct"}]


def test_qa_correctness_keeps_cannot_tell_as_a_label_without_a_value(app, rules):
    run = evalyard.evaluate(QA, ["qa_correctness"], app=app, judge_model=rules(QA_RULES))
    stats = run.summary["qa_correctness"]
    assert stats["labels"] == {"cannot_tell": 1, "correct": 1, "incorrect": 1}
    assert stats["errors"] == 0 and stats["scored"] == 2 and stats["mean"] == 0.5  # cannot_tell not averaged in
    by_case = {r["case_id"]: r for r in run.results}
    assert by_case["unsure"]["value"] is None and by_case["unsure"]["passed"] is None
    assert by_case["unsure"]["error"] is None and "No height given" in by_case["unsure"]["details"]["raw"]
    assert by_case["right"]["passed"] is True and by_case["wrong"]["passed"] is False


def test_qa_correctness_unreadable_answer_is_an_error_with_the_raw_text(rules, score):
    [result] = score(QACorrectness(model=rules([{"content": "Probably fine?"}])), QA[0])
    assert result.value is None and "unreadable answer" in result.error
    assert result.details["raw"] == "Probably fine?"


def test_qa_correctness_samples_vote_and_report_agreement(rules, score):
    model = rules([{"content": "ANSWER: incorrect", "times": 1}, {"content": "ANSWER: correct"}])
    [result] = score(QACorrectness(model=model, samples=3), QA[0])
    assert (result.value, result.label) == (1.0, "correct")
    assert result.details["agreement"] == pytest.approx(2 / 3) and len(result.details["samples"]) == 3


def test_qa_correctness_structured_answers(rules, score):
    model = rules([{"content": {"reasoning": "Lyon is wrong", "answer": "incorrect"}}])
    [result] = score(QACorrectness(model=model, structured=True), QA[1])
    assert (result.value, result.label) == (0.0, "incorrect") and result.details["reasoning"] == "Lyon is wrong"


SUMMARY = Case(id="s", input="The council approved the new bridge on Monday after a two-year debate.",
               reference="The council approved the bridge.", candidate="After two years, the bridge was approved.")


def test_summary_quality_cancels_a_judge_that_always_prefers_the_first_position(rules, score):
    [result] = score(SummaryQuality(model=rules([{"content": "The first one reads better.\nANSWER: first"}])),
                     SUMMARY)
    assert result.value == 0.5 and result.label == "inconsistent"
    assert result.details["agreement"] is False and result.details["position_bias"] is True
    assert result.details["winners"] == ["candidate", "reference"]
    assert [v["answer"] for v in result.details["verdicts"]] == ["first", "first"]
    assert result.usage["calls"] == 2


def test_summary_quality_a_consistent_judge_gives_win_loss_and_tie(rules, score):
    # This judge prefers whichever summary mentions "two years", in either position.
    prefers = rules([{"regex": r"First summary:\s*<data-\w+>\s*After two years", "content": "ANSWER: first"},
                     {"content": "ANSWER: second"}])
    [win] = score(SummaryQuality(model=prefers), SUMMARY)
    assert (win.value, win.label, win.details["agreement"]) == (1.0, "candidate", True)
    loser = Case(id="l", input=SUMMARY.input, reference=SUMMARY.candidate, candidate=SUMMARY.reference)
    [loss] = score(SummaryQuality(model=prefers), loser)
    assert (loss.value, loss.label) == (0.0, "reference")
    [tie] = score(SummaryQuality(model=rules([{"content": "ANSWER: tie"}])), SUMMARY)
    assert (tie.value, tie.label, tie.details["agreement"]) == (0.5, "equal", True)
    half = rules([{"regex": r"First summary:\s*<data-\w+>\s*After two years", "content": "ANSWER: first"},
                  {"content": "ANSWER: tie"}])
    [partial] = score(SummaryQuality(model=half), SUMMARY)
    assert (partial.value, partial.label, partial.details["agreement"]) == (0.75, "candidate", False)


def test_summary_quality_one_failed_order_is_an_error_naming_it(rules, score):
    model = rules([{"regex": r"First summary:\s*<data-\w+>\s*After two years", "content": "ANSWER: first"},
                   {"content": "no idea"}])
    [result] = score(SummaryQuality(model=model), SUMMARY)
    assert result.value is None and result.error.startswith("reference_first:")


CONTEXT = ["Marie Curie won the Nobel Prize in Physics in 1903 and in Chemistry in 1911."]
ANSWER = Case(id="curie", candidate="Marie Curie won two Nobel Prizes. She was born in Vienna.", context=CONTEXT)
CLAIMS = {"template": "judge/hallucination_claims",
          "content": {"claims": ["Marie Curie won two Nobel Prizes.", "Marie Curie was born in Vienna."]}}


def test_hallucination_checks_each_claim_and_reports_the_share(rules, score):
    model = rules([CLAIMS,
                   {"template": "judge/hallucination_check", "contains": "born in Vienna",
                    "content": "The passages do not say where she was born.\nANSWER: no"},
                   {"template": "judge/hallucination_check", "content": "Stated.\nANSWER: yes"}])
    [result] = score(Hallucination(model=model), ANSWER)
    assert (result.value, result.label) == (1.0, "hallucination")
    assert result.details["unsupported_share"] == 0.5 and result.details["unsupported"] == 1
    assert [c["supported"] for c in result.details["claims"]] == [True, False]
    assert result.details["claims"][1]["claim"] == "Marie Curie was born in Vienna."
    assert result.usage["calls"] == 3


def test_hallucination_all_supported_or_no_claims_is_0(rules, score):
    supported = rules([CLAIMS, {"template": "judge/hallucination_check", "content": "ANSWER: yes"}])
    [result] = score(Hallucination(model=supported), ANSWER)
    assert (result.value, result.label, result.details["unsupported_share"]) == (0.0, "no_hallucination", 0.0)
    nothing = rules([{"template": "judge/hallucination_claims", "content": {"claims": []}}])
    [empty] = score(Hallucination(model=nothing), Case(id="hi", candidate="Hello!", context=CONTEXT))
    assert (empty.value, empty.details["claims"]) == (0.0, [])


def test_hallucination_unchecked_claims_give_an_error_unless_one_is_already_unsupported(rules, score):
    failing = rules([CLAIMS, {"template": "judge/hallucination_check", "contains": "born", "error": 400},
                     {"template": "judge/hallucination_check", "content": "ANSWER: yes"}])
    [result] = score(Hallucination(model=failing), ANSWER)
    assert result.value is None and "1 of 2 claims could not be checked" in result.error
    decided = rules([CLAIMS, {"template": "judge/hallucination_check", "contains": "born", "error": 400},
                     {"template": "judge/hallucination_check", "content": "ANSWER: no"}])
    [result] = score(Hallucination(model=decided), ANSWER)
    assert result.value == 1.0 and result.details["unchecked"] == 1


def test_hallucination_logprob_confidence_per_claim(rules, score):
    model = rules([CLAIMS, {"template": "judge/hallucination_check", "content": "yes",
                            "logprobs": {"yes": -0.105, "no": -2.3}}])
    [result] = score(Hallucination(model=model, logprobs=True), ANSWER)
    assert result.value == 0.0
    assert all(c["p_yes"] == pytest.approx(0.9, abs=0.01) for c in result.details["claims"])


def test_logprobs_on_a_choice_judge_is_a_config_error_before_any_call(app, rules):
    from evalyard import InputError

    with pytest.raises(InputError, match="logprobs works with binary answers and with choices whose every label has a value"):
        evalyard.evaluate(QA, [{"name": "qa_correctness", "config": {"logprobs": True}}], app=app,
                          judge_model=rules([{"content": "x"}]))
