"""Prefix reuse and parallel slots on the real local models: a call that reuses the KV cache of
the prefix it shares with the slot's last prompt answers exactly as a cold call does (text and
every top-10 logprob), in any order, a repeated prompt included, and the slots setting decides
how many calls run at once."""

from __future__ import annotations

from evalyard import Application

import asyncio

import pytest

from local_helpers import LOCAL_SETTINGS, QWEN, SMOL

# A judge prompt's static part first, then the case: what a slot can reuse is the static part.
STATIC = ("You check claims against a source text. Say yes when the source states the claim, and no when "
          "the source contradicts it or does not mention it. Dates, names and numbers must match exactly; "
          "wording may differ. Answer with one word, yes or no.\n\n")
CASES = [("The Eiffel Tower was completed in 1889.", "The Eiffel Tower was completed in 1925."),
         ("Marie Curie was born in Warsaw in 1867.", "Marie Curie was born in Berlin."),
         ("Water boils at 100 degrees Celsius at sea level.", "At sea level, water boils at 100 degrees Celsius."),
         ("The Amazon river flows into the Atlantic Ocean.", "The Amazon flows into the Pacific Ocean.")]
PROMPTS = [[{"role": "system", "content": "You are a careful fact checker."},
            {"role": "user", "content": f"{STATIC}Source: {source}\nClaim: {claim}\nDoes the source support the claim?"}]
           for source, claim in CASES]
PARAMS = {"temperature": 0, "max_tokens": 1}
#: Generous: on a loaded shared machine a first call (loading included) can take minutes.
TIMEOUT_S = 900


def layer_for(model, **settings):
    import evalyard_local.plugin  # noqa: F401  (registers the local/ provider)
    from evalyard.models import ModelSettings

    return Application().model_layer(settings={model: ModelSettings(**{**LOCAL_SETTINGS, **settings}, timeout=TIMEOUT_S)})


def loaded(model):
    from evalyard_local.plugin import ENGINE

    return ENGINE.loaded()[model.removeprefix("local/")]


def answers(layer, model, prompts, **params):
    """Text and per-token top-10 logprobs of each prompt, asked one after the other."""
    out = []
    for messages in prompts:
        completion = layer.complete_sync(model, messages, params={**PARAMS, **params}, logprobs=10, no_cache=True)
        out.append((completion.text, completion.logprobs))
    return out


def check_reuse_is_exact(model):
    layer = layer_for(model)
    try:
        cold = answers(layer, model, PROMPTS, cache_prompt=False)
        engine = loaded(model)
        cached_before = engine.cached_tokens
        warm = answers(layer, model, PROMPTS)
        backwards = answers(layer, model, PROMPTS[::-1])[::-1]  # each one after a different neighbour
    finally:
        layer.close()
    # Every warm call after the first found at least the static part in its slot.
    assert engine.cached_tokens - cached_before >= 2 * (len(PROMPTS) - 1) * 40
    assert all(text and logprobs for text, logprobs in cold)
    assert warm == cold
    assert backwards == cold


def test_prefix_reuse_gives_the_cold_answers_and_logprobs_smollm(smol_path):
    check_reuse_is_exact(SMOL)


@pytest.mark.slow
def test_prefix_reuse_gives_the_cold_answers_and_logprobs_qwen(qwen_models):
    # qwen's Q4_K weights are where llama.cpp's default (repacked) kernels depend on the batch.
    check_reuse_is_exact(QWEN)


@pytest.mark.parametrize("slots", [1, 2])
def test_the_slots_setting_decides_how_many_calls_run_at_once(smol_path, monkeypatch, slots):
    from evalyard_local.plugin import ENGINE

    monkeypatch.setenv("EVALYARD_LOCAL_PARALLEL", str(slots))
    assert Application().model_providers["local"].capabilities(SMOL)["concurrency"] == slots
    layer = layer_for(SMOL, concurrency=slots)

    async def together():
        return await asyncio.gather(*(layer.complete(SMOL, m, params={**PARAMS, "max_tokens": 4}, logprobs=10,
                                                     no_cache=True) for m in PROMPTS))

    try:
        sequential = answers(layer, SMOL, PROMPTS, max_tokens=4, cache_prompt=False)
        engine = loaded(SMOL)
        engine.peak_in_flight = 0
        concurrent = [(c.text, c.logprobs) for c in layer.run_sync(together())]
    finally:
        layer.close()
    assert engine.settings.n_parallel == slots
    assert engine.peak_in_flight == slots
    assert all(text for text, _ in concurrent)
    if slots == 1:
        # Queued behind each other on one slot, cached prefix or not: the cold answers. (Two slots
        # batch their tokens together, and llama.cpp's kernels round a shared batch differently.)
        assert concurrent == sequential


def test_a_follow_up_turn_after_the_slots_own_answer_gets_the_cold_answer(smol_path):
    """A repair asks again in the same conversation: its prompt starts with the slot's last prompt
    and the answer the slot generated. llama.cpp would reuse the KV cache of those generated tokens,
    computed one at a time, which round differently from the same tokens in a prompt's batch (this
    case of a judge's repair turn gave 23 completion tokens warm against 26 cold); the engine sends
    such a turn cold."""
    first = [{"role": "system", "content": "You check claims against a source text. You judge only what the source "
                                          "says.\n\nReply with only `yes` or `no`, and nothing else."},
             {"role": "user", "content": "Source:\n<data-a14a0ad1edfd82b8>\nThe Eiffel Tower was completed in 1889.\n"
                                         "</data-a14a0ad1edfd82b8>\nClaim:\n<data-a14a0ad1edfd82b8>\nThe Eiffel Tower "
                                         "was completed in 1889.\n</data-a14a0ad1edfd82b8>\n\nDoes the source support "
                                         "the claim? Say yes only when the source states it.\n\nReply with only `yes` "
                                         "or `no`."}]
    schema = {"type": "json_schema", "json_schema": {"name": "answer", "strict": True, "schema": {
        "type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
        "required": ["answer"], "additionalProperties": False}}}
    layer = layer_for(SMOL)
    try:
        [(said, _)] = answers(layer, SMOL, [first], max_tokens=40)
        again = first + [{"role": "assistant", "content": said},
                         {"role": "user", "content": "That reply cannot be read. Reply with only `yes` or `no`."}]
        repair = {"max_tokens": 40, "response_format": schema}
        cold = answers(layer, SMOL, [again], cache_prompt=False, **repair)
        answers(layer, SMOL, [first], max_tokens=40)  # the slot holds the first turn and its answer again
        engine = loaded(SMOL)
        cached_before = engine.cached_tokens
        warm = answers(layer, SMOL, [again], **repair)
    finally:
        layer.close()
    assert said and cold[0][0]
    assert warm == cold
    assert engine.cached_tokens == cached_before  # sent cold
