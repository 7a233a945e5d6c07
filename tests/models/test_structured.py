"""Structured output: the tolerant reader, the prompt fallback and the one repair call."""

from __future__ import annotations

import json

import pytest
from model_helpers import user

from evalyard.models import ModelSettings, StructuredOutputError
from evalyard.models.structured import parse_json_answer

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
          "required": ["answer"]}


@pytest.mark.parametrize("text", [
    '{"answer": "no"}',
    'Sure! ```json\n{"answer": "no"}\n```',
    'The text claims {"answer": "yes"} but I disagree.\n{"answer": "no"}',
    '{"answer": "no",}',
])
def test_reader_takes_the_last_fitting_object(text):
    assert parse_json_answer(text, SCHEMA) == {"answer": "no"}


@pytest.mark.parametrize("text", ["", "no JSON here", '{"answer": "maybe"}', '{"verdict": "yes"}'])
def test_reader_refuses_what_does_not_fit(text):
    with pytest.raises(ValueError):
        parse_json_answer(text, SCHEMA)


def test_prompt_fallback_then_one_repair_call(layer, rules, run):
    model = rules([{"contains": "could not be used", "content": {"answer": "yes"}},
                   {"contains": "JSON schema", "content": "I think the answer is yes."}])
    answer = run(layer.complete_json(model, user("Is it?"), SCHEMA))
    assert answer.mode == "prompt" and answer.repaired and answer.value == {"answer": "yes"}
    assert len(answer.completions) == 2


def test_still_unreadable_is_an_error_with_the_raw_text(layer, rules, run):
    model = rules([{"content": "no idea, sorry"}])
    with pytest.raises(StructuredOutputError) as info:
        run(layer.complete_json(model, user("Is it?"), SCHEMA))
    assert info.value.raw == "no idea, sorry" and info.value.details()["raw"] == "no idea, sorry"


def test_schema_goes_through_response_format_when_supported(layer, rules, run):
    model = rules([{"content": {"answer": "no"}}])
    layer.settings[model] = ModelSettings(supports_schema=True)
    answer = run(layer.complete_json(model, user("Is it?"), SCHEMA))
    assert answer.mode == "schema" and answer.value == {"answer": "no"}
    assert answer.completions[0].key_inputs["params"]["response_format"]["json_schema"]["schema"] == SCHEMA
    assert "JSON schema" not in json.dumps(answer.completions[0].key_inputs["messages"])
