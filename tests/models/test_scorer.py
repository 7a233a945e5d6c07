"""Prompt scorers through the real layer with the scripted model."""

from __future__ import annotations

import pytest

from evalyard import Application
from evalyard.testing import score_cases
from evalyard import Case, ConfigError
from evalyard.prompting import PromptLibrary, PromptScorer, register_prompt_scorer, scorer_from_template

CASE = Case(id="c1", input="What is the capital of France?", candidate="Paris", reference="Paris")


def scorer_for(template, model, layer, answer=None, **options):
    cls = register_prompt_scorer("judge", template=template, answer=answer)
    scorer = cls(model=model, **options)
    scorer.models = layer
    return scorer


def score(run, scorer, cases=(CASE,)):
    return run(score_cases(scorer, cases))


def test_binary_from_the_final_line(layer, rules, run):
    model = rules([{"content": "It matches the reference.\nANSWER: yes", "usage": {"cost": 0.001}}])
    [result] = score(run, scorer_for("correctness", model, layer))
    assert (result.value, result.label, result.error) == (1.0, "yes", None)
    assert result.details["template"] == "correctness" and "It matches" in result.details["raw"]
    assert result.usage["calls"] == 1 and result.usage["cost"] == 0.001


def test_score_is_normalised_with_the_raw_number_kept(layer, rules, run):
    model = rules([{"content": "Mostly on topic.\nANSWER: 4"}])
    [result] = score(run, scorer_for("relevance", model, layer))
    assert result.value == pytest.approx(0.75) and result.details["raw_score"] == 4


def test_choice_gives_label_and_mapped_value(layer, rules, run):
    model = rules([{"content": "ANSWER: partly_helpful"}])
    [result] = score(run, scorer_for("helpfulness", model, layer))
    assert (result.label, result.value) == ("partly_helpful", 0.5)


def test_json_answer_reads_the_declared_field(layer, rules, run):
    model = rules([{"content": {"reasoning": "stated in passage 1", "status": "supported", "supported": True}}])
    case = Case(id="c", candidate="The tower was finished in 1889.", context=["Completed in 1889."])
    [result] = score(run, scorer_for("claim_support", model, layer), [case])
    assert (result.value, result.label) == (1.0, "supported")


def test_structured_binary_uses_the_schema(layer, rules, run):
    model = rules([{"content": {"reasoning": "same city", "answer": "no"}}])
    [result] = score(run, scorer_for("correctness", model, layer, structured=True))
    assert (result.value, result.label) == (0.0, "no") and result.details["reasoning"] == "same city"


def test_unparseable_answer_is_a_failure_with_the_raw_text_never_zero(layer, rules, run):
    model = rules([{"content": "Hard to say, really."}])
    [result] = score(run, scorer_for("correctness", model, layer))
    assert result.value is None and "unreadable answer" in result.error
    assert result.details["raw"] == "Hard to say, really."


def test_model_errors_are_recorded_per_case(layer, rules, run):
    model = rules([{"error": 401}])
    [result] = score(run, scorer_for("correctness", model, layer))
    assert result.value is None and "AuthenticationError" in result.error and result.details["status"] == 401


def test_samples_majority_vote_with_agreement(layer, rules, run):
    model = rules([{"content": "ANSWER: yes", "times": 2}, {"content": "ANSWER: no"}])
    [result] = score(run, scorer_for("correctness", model, layer, samples=3))
    assert (result.value, result.label) == (1.0, "yes")
    assert result.details["agreement"] == pytest.approx(2 / 3) and len(result.details["samples"]) == 3
    assert result.usage["calls"] == 3


def test_samples_mean_for_scores(layer, rules, run):
    model = rules([{"content": "ANSWER: 5", "times": 1}, {"content": "ANSWER: 3"}])
    [result] = score(run, scorer_for("relevance", model, layer, samples=2))
    assert result.value == pytest.approx(0.75) and result.details["vote"] == "mean"


def test_logprobs_value_is_p_yes(layer, rules, run):
    model = rules([{"content": "Yes", "logprobs": [{"Yes": -0.105, " yes": -3.0, "No": -2.4, "NO": -5.0}]}])
    [result] = score(run, scorer_for("correctness", model, layer, logprobs=True))
    assert 0.85 < result.value < 0.95 and result.label == "yes" and result.details["p_yes"] == result.value


def test_logprobs_fallback_is_explicit_and_recorded(layer, rules, run):
    model = rules([{"content": "no"}])
    [result] = score(run, scorer_for("correctness", model, layer, logprobs=True))
    assert result.value == 0.0 and result.details["logprobs"].startswith("unavailable")


def test_reasoning_off_asks_for_the_bare_answer(layer, rules, run):
    model = rules([{"contains": "Reply with only", "content": "yes"}])
    [result] = score(run, scorer_for("correctness", model, layer, reasoning=False))
    assert result.value == 1.0


def test_missing_model_says_how_to_set_one(layer, monkeypatch, run):
    monkeypatch.delenv("EVALYARD_JUDGE_MODEL", raising=False)
    scorer = register_prompt_scorer("judge", template="correctness")()
    scorer.models = layer
    with pytest.raises(ConfigError, match="--judge-model MODEL, set EVALYARD_JUDGE_MODEL, or give the scorer a `model`"):
        scorer.check_ready()  # what a run's set-up calls, before anything is stored


def test_judge_model_from_the_layer_never_from_the_environment(rules, fast_retry, monkeypatch, run):
    """Outside a run the judge model is the scorer's or its layer's: the environment is the
    application's to read (a runtime hands it over in a run)."""
    model = rules([{"content": "ANSWER: yes"}])
    scorer = register_prompt_scorer("judge", template="correctness")()
    scorer.models = Application().model_layer(retry=fast_retry, judge_model=model)
    assert scorer.judge_model() == model
    monkeypatch.setenv("EVALYARD_JUDGE_MODEL", "env/model")
    scorer.models = None
    with pytest.raises(ConfigError, match="needs a judge model"):
        scorer.judge_model()


def test_second_run_makes_no_provider_calls(layer, rules, run):
    model = rules([{"content": "ANSWER: yes"}])
    scorer = scorer_for("correctness", model, layer)
    cases = [Case(id=str(n), input=f"q{n}", candidate="a", reference="a") for n in range(5)]
    score(run, scorer, cases)
    second = score(run, scorer, cases)
    assert all(r.usage["cache_hits"] == 1 for r in second) and layer.usage.requests == 5


def test_register_prompt_scorer_from_text(layer, rules, run):
    model = rules([{"contains": "polite", "content": "ANSWER: no"}])
    cls = register_prompt_scorer("polite", template="Is this reply polite?\n\n{{ candidate }}", answer="binary",
                                 model=model, threshold=0.5)
    assert issubclass(cls, PromptScorer) and cls.requires == ("candidate",) and cls.threshold == 0.5
    scorer = cls()
    scorer.models = layer
    [result] = score(run, scorer)
    assert result.label == "no"


def test_template_file_declares_a_scorer_without_python(tmp_path, layer, rules, run):
    (tmp_path / "tone.jinja").write_text(
        "---\ndescription: Is the tone friendly?\nfields: [candidate]\nanswer: binary\n"
        "scorer: {name: friendly_tone, threshold: 0.5}\n---\nIs this friendly?\n{{ candidate }}\n")
    library = PromptLibrary([tmp_path])
    [template] = [t for t in library.scorer_templates()]
    cls = scorer_from_template(template)
    assert cls.name == "friendly_tone" and cls.description == "Is the tone friendly?"
    model = rules([{"template": "tone", "content": "ANSWER: yes"}])
    scorer = cls(model=model)
    scorer.models = layer
    [result] = score(run, scorer)
    assert result.value == 1.0


def test_user_override_changes_the_prompt_sent(tmp_path, layer, rules, run):
    (tmp_path / "correctness.jinja").write_text(
        "---\nfields: [candidate, reference]\nanswer: binary\n---\nMY OWN WORDING {{ candidate }} {{ reference }}\n")
    model = rules([{"contains": "MY OWN WORDING", "content": "ANSWER: no"}, {"content": "ANSWER: yes"}])
    scorer = scorer_for("correctness", model, layer)
    scorer.prompts = PromptLibrary([tmp_path])
    assert score(run, scorer)[0].label == "no"
    scorer.prompts = PromptLibrary()
    assert score(run, scorer)[0].label == "yes"


def test_logprobs_need_a_binary_answer(layer, rules, run):
    with pytest.raises(ConfigError, match="logprobs works with binary answers and with choices whose every label has a value"):
        scorer_for("relevance", rules([{"content": "1"}]), layer, logprobs=True).check_ready()


def test_an_unreadable_json_answer_still_counts_both_calls_in_the_results_usage(layer, rules, run):
    model = rules([{"content": "not json at all", "usage": {"cost": 0.002}}])
    [result] = score(run, scorer_for("correctness", model, layer, structured=True))
    assert result.value is None and "unreadable JSON answer after one repair call" in result.error
    assert result.details["raw"] == "not json at all"
    assert result.usage["calls"] == 2 and result.usage["cost"] == pytest.approx(0.004)
