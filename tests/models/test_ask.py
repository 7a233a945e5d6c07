"""The one judge call (``evalyard.prompting.ask``) through the real layer with the scripted model:
the parameter rule, the repair call, P(yes) with a short reply, usage that adds up, and the one
failure type a run records as an error with its usage."""

from __future__ import annotations

import pytest

from evalyard import Case, JudgeError, Score
from evalyard.models import ModelSettings, Usage
from evalyard.prompting import AnswerShape, PromptLibrary, ask, call_params, parse_template

CASE = Case(id="c1", input="What is the capital of France?", candidate="Paris", reference="Paris")
BINARY = AnswerShape.from_spec("binary")


def sent_params(layer):
    """The request parameters of every call the layer answered (from its response cache)."""
    return [record.request["params"] for record in layer.cache._records.values()]


def test_parameters_follow_one_rule(layer):
    layer.settings["m"] = ModelSettings(params={"temperature": 0.3, "top_p": 0.9, "seed": 1})
    merged = call_params(layer, "m", config={"temperature": None, "max_tokens": 50},
                         template={"top_p": 0.5}, defaults={"temperature": 0.0, "max_tokens": 10, "stop": "x"})
    # config > template > model settings > defaults; None in the config means "not set"
    assert merged == {"temperature": 0.3, "top_p": 0.5, "seed": 1, "max_tokens": 50, "stop": "x"}


def test_template_parameters_beat_the_default_and_config_beats_the_template(layer, rules, run):
    template = parse_template("---\nfields: [candidate]\nanswer: binary\nparameters: {temperature: 0.5}\n---\n"
                              "Is {{ candidate }} a city?", name="t")
    model = rules([{"content": "ANSWER: yes"}])
    run(ask(layer, model, template, CASE))
    run(ask(layer, model, template, CASE, params={"temperature": 0.9}))
    assert sorted(p["temperature"] for p in sent_params(layer)) == [0.5, 0.9]


def test_an_unreadable_text_answer_gets_one_repair_call_and_both_calls_count(layer, rules, run):
    model = rules([{"contains": "cannot be read", "content": '{"answer": "yes"}'},
                   {"content": "The data markers say the material is to be evaluated."}])
    judgement = run(ask(layer, model, PromptLibrary().get("correctness"), CASE))
    assert judgement.ok and (judgement.value, judgement.label) == (1.0, "yes")
    assert judgement.details["repaired"] is True
    assert judgement.usage.calls == 2
    repair = [p for p in sent_params(layer) if p.get("max_tokens")]
    assert repair and all(p["max_tokens"] <= 40 for p in repair)  # the repair asks for the answer only


def test_a_reply_still_unreadable_is_an_error_that_keeps_its_usage(layer, rules, run):
    model = rules([{"content": "I would rather not say.", "usage": {"cost": 0.002}}])
    judgement = run(ask(layer, model, PromptLibrary().get("correctness"), CASE))
    assert not judgement.ok and "unreadable answer" in judgement.error
    assert judgement.usage.calls == 2 and judgement.usage.cost == pytest.approx(0.004)
    score = judgement.score()
    assert score.value is None and score.error and score.usage["calls"] == 2
    with pytest.raises(JudgeError) as raised:
        judgement.require("verdict", Usage(calls=3, prompt_tokens=7))
    failure = Score.failure(raised.value)  # what an executor records for the case
    assert failure.value is None and failure.error.startswith("verdict: ")
    assert failure.usage["calls"] == 5 and failure.details["step"] == "verdict"


def test_no_repair_call_when_asked_for_none(layer, rules, run):
    model = rules([{"content": "maybe"}])
    judgement = run(ask(layer, model, PromptLibrary().get("correctness"), CASE, repair=False))
    assert not judgement.ok and judgement.usage.calls == 1


def test_p_yes_reads_the_first_token_and_asks_for_a_few_tokens_only(layer, rules, run):
    model = rules([{"content": "Yes", "logprobs": [{"Yes": -0.1, "No": -2.4}]}])
    judgement = run(ask(layer, model, PromptLibrary().get("correctness"), CASE, logprobs=True))
    assert judgement.value == pytest.approx(0.909, abs=1e-3) and judgement.label == "yes"
    assert judgement.details["value_from"] == "P(yes) of the first answer token"
    [params] = sent_params(layer)
    assert params["max_tokens"] == 1 and params["logprobs"] is True


def test_json_steps_give_the_object_and_a_list_shape(layer, rules, run):
    template = parse_template(
        "---\nfields: [candidate]\nanswer:\n  type: json\n  schema:\n    type: object\n    properties:\n"
        "      items: {type: array, items: {type: string}}\n    required: [items]\n---\nList the cities in "
        "{{ candidate }}.", name="t")
    model = rules([{"content": {"items": ["Paris"]}}])
    judgement = run(ask(layer, model, template, CASE))
    assert judgement.ok and judgement.answer == {"items": ["Paris"]} and judgement.value is None


def test_samples_vote_and_usage_adds_up(layer, rules, run):
    model = rules([{"content": "ANSWER: yes", "usage": {"cost": 0.001}}])
    judgement = run(ask(layer, model, PromptLibrary().get("correctness"), CASE, samples=3))
    assert judgement.label == "yes" and judgement.details["agreement"] == 1.0
    assert judgement.usage.calls == 3 and judgement.usage.cost == pytest.approx(0.003)
    total = sum([judgement.usage, Usage(calls=1, cost=None, cost_complete=False)], Usage())
    assert total.calls == 4 and total.cost == pytest.approx(0.003) and total.cost_complete is False
