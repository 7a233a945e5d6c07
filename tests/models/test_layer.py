"""The model layer through litellm and the scripted provider: cache, retries, limits, usage."""

from __future__ import annotations

import asyncio
import time

import pytest
from model_helpers import gather_all, user

from evalyard import Application
from evalyard.models import (AdaptiveLimit, CostLimitReached, MemoryCache, ModelCallError, ModelLayer, SQLCache,
                             UsageMeter, cache_key, cache_stats, clear_cache, key_inputs, parse_age)


def test_answer_usage_and_cache_hit_keeps_original_figures(layer, rules, run):
    model = rules([{"contains": "capital", "content": "Paris", "usage": {"prompt_tokens": 12,
                                                                        "completion_tokens": 1, "cost": 0.003},
                    "delay_ms": 30}])
    first = run(layer.complete(model, user("What is the capital of France?")))
    second = run(layer.complete(model, user("What is the capital of France?")))
    assert (first.text, first.cached, second.text, second.cached) == ("Paris", False, "Paris", True)
    assert second.usage == first.usage and first.usage.cost == 0.003
    assert second.latency_ms == first.latency_ms >= 30
    usage = layer.usage.to_dict()
    assert (usage["calls"], usage["cache_hits"], usage["requests"]) == (2, 1, 1)
    assert usage["cost"] == pytest.approx(0.003) and usage["cached_cost"] == pytest.approx(0.003)


def test_key_covers_model_messages_params_and_sample():
    base = cache_key("m", user("q"), {"temperature": 0}, 0)
    assert base == cache_key("m", user("q"), {"temperature": 0, "timeout": 5, "api_base": "x"}, 0)
    assert len({base, cache_key("m2", user("q"), {"temperature": 0}, 0), cache_key("m", user("q2"), {"temperature": 0}, 0),
                cache_key("m", user("q"), {"temperature": 1}, 0), cache_key("m", user("q"), {"temperature": 0}, 1)}) == 5
    assert key_inputs("m", user("q"), {"temperature": 0, "api_key": "k"}, 2) == {
        "v": 1, "model": "m", "messages": user("q"), "params": {"temperature": 0}, "sample": 2}


def test_samples_are_distinct_calls_and_no_cache_asks_again(layer, rules, run):
    model = rules([{"content": "yes"}])
    for sample in range(3):
        run(layer.complete(model, user("q"), sample=sample))
    assert layer.usage.cache_hits == 0
    run(layer.complete(model, user("q"), sample=1))
    assert layer.usage.cache_hits == 1
    again = run(layer.complete(model, user("q"), sample=1, no_cache=True))
    assert not again.cached and layer.usage.requests == 4


def test_errors_are_never_cached(layer, rules, run):
    model = rules([{"error": 400, "times": 1}, {"content": "fine"}])
    with pytest.raises(ModelCallError) as info:
        run(layer.complete(model, user("q")))
    assert info.value.status == 400 and info.value.attempts == 1  # a 400 is not retried
    assert len(layer.cache) == 0
    assert run(layer.complete(model, user("q"))).text == "fine"


def test_429_and_5xx_are_retried_and_counted(layer, rules, run):
    model = rules([{"error": 429, "times": 2, "retry_after": 0}, {"error": 503, "times": 1},
                   {"content": "made it"}])
    completion = run(layer.complete(model, user("q")))
    assert completion.text == "made it" and completion.attempts == 4
    assert layer.usage.retries == 3 and layer.usage.requests == 4
    assert layer.limit_for(model).backoffs >= 1


def test_retry_after_is_honoured(layer, rules, run):
    model = rules([{"error": 429, "times": 1, "retry_after": 0.3}, {"content": "ok"}])
    started = time.perf_counter()
    run(layer.complete(model, user("q")))
    assert time.perf_counter() - started >= 0.3


def test_gives_up_after_max_attempts_with_a_clear_error(layer, rules, run):
    model = rules([{"error": 500}])
    with pytest.raises(ModelCallError, match="gave up after 6 attempts") as info:
        run(layer.complete(model, user("q")))
    assert info.value.status == 500 and layer.usage.errors == 1


def test_timeout_per_call_is_retried_then_reported(fast_retry, rules, run):
    layer = Application().model_layer(retry=fast_retry, timeout=0.05)
    model = rules([{"content": "slow", "delay_ms": 2000}])
    with pytest.raises(ModelCallError, match="timeout") as info:
        run(layer.complete(model, user("q")))
    assert info.value.status == 408 and info.value.attempts == 6
    layer.close()


def test_global_request_cap_counts_requests(fast_retry, rules, run):
    layer = Application().model_layer(retry=fast_retry, concurrency=2)
    model = rules([{"content": "ok", "delay_ms": 100}])
    started = time.perf_counter()
    run(gather_all(*(layer.complete(model, user(f"q{n}")) for n in range(6))))
    assert time.perf_counter() - started >= 0.3  # six 100 ms calls, two at a time
    layer.close()


def test_aimd_halves_once_per_window_and_grows_back():
    limit = AdaptiveLimit(16)
    windows = [limit.window for _ in range(5)]
    for window in windows:  # five 429s from requests started in the same window: one cut
        limit.pushback(window)
    assert limit.slots.size == 8 and limit.backoffs == 1
    limit.pushback(limit.window)
    assert limit.slots.size == 4
    for _ in range(200):
        limit.success()
    assert limit.slots.size == 16


def test_rpm_limit_spaces_requests(fast_retry, rules, run):
    from evalyard.models import ModelSettings

    model = rules([{"content": "ok"}])
    layer = Application().model_layer(retry=fast_retry, settings={model: ModelSettings(rpm=600)})  # one per 0.1 s
    started = time.perf_counter()
    run(gather_all(*(layer.complete(model, user(f"q{n}")) for n in range(4))))
    assert time.perf_counter() - started >= 0.3
    layer.close()


def test_max_cost_stops_before_the_next_call(fast_retry, rules, run):
    model = rules([{"content": "ok", "usage": {"cost": 0.5}}])
    layer = Application().model_layer(retry=fast_retry, usage=UsageMeter(max_cost=1.0))
    run(layer.complete(model, user("a")))
    run(layer.complete(model, user("b")))
    with pytest.raises(CostLimitReached):
        run(layer.complete(model, user("c")))
    assert run(layer.complete(model, user("a"))).cached  # cached answers cost nothing and still come back
    layer.close()


def test_unknown_price_is_none_never_zero(layer, rules, run):
    model = rules([{"content": "ok"}])
    completion = run(layer.complete(model, user("q")))
    assert completion.usage.cost is None and completion.usage.prompt_tokens == 1
    usage = layer.usage.to_dict()
    assert usage["cost"] is None and usage["unknown_cost_calls"] == 1


def test_known_price_comes_from_the_bundled_map(run):
    from evalyard.models.providers import cost_of, load_litellm

    litellm = load_litellm()
    response = run(litellm.acompletion(model="gpt-4o-mini", messages=user("hi"), mock_response="hello"))
    assert cost_of(litellm, response, "gpt-4o-mini") > 0


def test_no_matching_rule_names_the_prompt(layer, rules, run):
    model = rules([{"contains": "something else", "content": "x"}])
    with pytest.raises(ModelCallError, match="no rule matches the prompt.*Unmatched question"):
        run(layer.complete(model, user("Unmatched question")))


def test_rules_match_template_substring_and_regex(layer, rules, run, tmp_path):
    model = rules([{"template": "judge/*", "content": "by template"},
                   {"regex": r"case \d+", "content": "by regex"},
                   {"contains": ["alpha", "beta"], "content": "by substrings"},
                   {"content": "fallback"}], name="rules.jsonl")
    assert run(layer.complete(model, user("x"), template="judge/one")).text == "by template"
    assert run(layer.complete(model, user("see case 12"))).text == "by regex"
    assert run(layer.complete(model, user("beta and alpha"))).text == "by substrings"
    assert run(layer.complete(model, user("alpha only"))).text == "fallback"


def test_sync_wrapper_works_inside_a_running_loop(layer, rules):
    model = rules([{"content": "from sync"}])

    async def inside():
        return layer.complete_sync(model, user("q"))  # as a notebook cell would

    assert asyncio.run(inside()).text == "from sync"
    assert layer.complete_sync(model, user("q")).cached


def test_sql_cache_keeps_calls_across_layers(rules, run, tmp_path, fast_retry):
    from sqlalchemy import create_engine
    from sqlmodel import SQLModel

    from evalyard.store.models import ModelCallRow

    engine = create_engine(f"sqlite:///{tmp_path / 'cache.db'}")
    SQLModel.metadata.create_all(engine, tables=[ModelCallRow.__table__])
    model = rules([{"content": "stored", "usage": {"cost": 0.01}}])
    first = Application().model_layer(cache=SQLCache(engine), retry=fast_retry)
    run(first.complete(model, user("q")))
    run(first.complete(model, user("other")))
    second = Application().model_layer(cache=SQLCache(engine), retry=fast_retry)
    hit = run(second.complete(model, user("q")))
    assert hit.cached and hit.text == "stored" and hit.usage.cost == 0.01
    assert hit.key_inputs["messages"] == user("q")
    stats = cache_stats(engine)
    assert [(s["model"], s["calls"], s["cost"]) for s in stats] == [(model, 2, pytest.approx(0.02))]
    assert clear_cache(engine, model="other-model") == 0
    assert clear_cache(engine, older_than=parse_age("1h")) == 0
    assert clear_cache(engine, model=model) == 2 and cache_stats(engine) == []
    first.close(), second.close()


def test_parse_age():
    assert parse_age("90s").total_seconds() == 90 and parse_age("7d").days == 7 and parse_age("3").days == 3
    with pytest.raises(ValueError):
        parse_age("soon")


def test_memory_cache_is_the_default():
    assert isinstance(ModelLayer().cache, MemoryCache)


def test_a_custom_provider_may_say_what_its_models_support(fast_retry):
    """A provider of ours (the local-model plugin's) tells the layer about its models; a suite's
    settings still win."""
    from evalyard.models import ModelSettings

    class Described:
        def capabilities(self, model):
            return {"supports_schema": True, "supports_logprobs": True, "concurrency": 1}

        def completion(self, *args, **kwargs):
            raise NotImplementedError

    app = Application()
    app.add_model_provider("described", Described())
    layer = app.model_layer(retry=fast_retry, concurrency=16)
    assert layer.supports_schema("described/x") and layer.supports_logprobs("described/x")
    assert layer.limit_for("described/x").slots.size == 1 and layer.limit_for("other/y").slots.size == 16
    overridden = app.model_layer(retry=fast_retry, settings={"described/x": ModelSettings(supports_schema=False,
                                                                                    concurrency=3)})
    assert not overridden.supports_schema("described/x") and overridden.limit_for("described/x").slots.size == 3
    layer.close()
    overridden.close()
