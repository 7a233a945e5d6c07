"""The real smollm2-135m through litellm and the model layer: every answer shape of the prompt
library gives a parseable verdict, with a probability read from the model's token logprobs."""

from __future__ import annotations

import json

import pytest

from evalyard import Case
from local_helpers import SMOL, answer_probability, layer_for, prompt_scorer

CASE = Case(id="paris", input="What is the capital of France?", candidate="The capital of France is Paris.",
            reference="Paris", context=["Paris is the capital and largest city of France."])


@pytest.fixture(scope="module")
def layer():
    layer = layer_for(SMOL)
    yield layer
    layer.close()


def test_binary_verdict_is_p_yes_from_first_token_logprobs(layer, smol_path):
    score = layer.run_sync(prompt_scorer(layer, "correctness", logprobs=True, max_tokens=8).ascore(CASE))
    assert score.error is None
    assert 0.0 < score.details["p_yes"] < 1.0 and score.value == score.details["p_yes"]
    assert score.label == ("yes" if score.value >= 0.5 else "no")
    assert score.usage["calls"] == 1 and score.usage["prompt_tokens"] > 50


@pytest.mark.parametrize("template, answer_key, allowed", [
    ("correctness", "answer", {"yes", "no"}),
    ("relevance", "answer", {"1", "2", "3", "4", "5"}),
    ("helpfulness", "answer", {"helpful", "partly_helpful", "unhelpful"}),
    ("claim_support", "status", {"supported", "contradicted", "not_addressed"}),
])
def test_every_answer_shape_is_parseable_under_the_schema_with_a_probability(layer, smol_path, template,
                                                                              answer_key, allowed):
    scorer = prompt_scorer(layer, template, structured=True, reasoning=False, max_tokens=200)
    shape = scorer.answer_shape()
    schema = shape.answer_schema(reasoning=False)
    rendered = scorer.prompt_template().render(CASE, reasoning=False, structured=True)
    answer = layer.run_sync(layer.complete_json(SMOL, rendered.messages, schema, template=template,
                                                params={"temperature": 0, "max_tokens": 200, "logprobs": True,
                                                        "top_logprobs": 5}))
    # The schema went through the API and constrained decoding kept the reply valid on the first try.
    assert answer.mode == "schema" and not answer.repaired
    value = answer.value[answer_key]
    assert str(value) in allowed
    token, probability = answer_probability(answer.completions[0].logprobs, answer_key)
    assert str(value).startswith(token.strip(' "')) and 0.0 < probability <= 1.0
    # The same shape read by the prompt scorer itself gives a verdict, never a fake 0.
    score = layer.run_sync(scorer.ascore(CASE))
    assert score.error is None, score.details
    assert score.value is not None and 0.0 <= score.value <= 1.0
    assert json.loads(score.details["raw"])  # the raw reply is the JSON that was read


def test_a_gbnf_grammar_constrains_a_free_text_answer(layer, smol_path):
    completion = layer.run_sync(layer.complete(
        SMOL, [{"role": "user", "content": "Is Paris in France? Answer yes or no."}],
        params={"temperature": 0, "max_tokens": 4, "grammar": 'root ::= "yes" | "no"'}, logprobs=5))
    assert completion.text in ("yes", "no")
    assert completion.top_logprobs()  # logprobs come with the constrained answer too
    assert completion.usage.cost == 0.0  # a local call is free, and known to be
