"""The under-60-lines judge plugin of ``tiny_judge_plugin.py`` (public API only) gets caching,
retries, structured output, P(yes) and usage from the core, through real runs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import evalyard

CASES = [{"id": "a", "input": "Where is my parcel?", "candidate": "It arrives tomorrow. Thanks for waiting!"},
         {"id": "b", "input": "Can I get a refund?", "candidate": "No. Read the terms."}]


@pytest.fixture
def tiny(app):
    import tiny_judge_plugin

    app.register_plugin(tiny_judge_plugin, name="tiny")
    return app


def test_the_plugin_is_small_and_imports_only_the_public_api():
    path = Path(__file__).with_name("tiny_judge_plugin.py")
    assert len(path.read_text().splitlines()) < 60
    modules = {n.module for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ImportFrom)}
    assert modules == {"__future__", "dataclasses", "evalyard"}


def test_retries_usage_and_the_cache(tiny, rules):
    model = rules([{"error": 429, "times": 1},
                   {"contains": "Thanks for waiting", "content": "Friendly and thankful.\nANSWER: yes",
                    "usage": {"cost": 0.001}},
                   {"content": "Curt.\nANSWER: no", "usage": {"cost": 0.001}}])
    first = evalyard.evaluate(CASES, ["polite"], app=tiny, judge_model=model)
    values = {r["case_id"]: r["value"] for r in first.results}
    assert values == {"a": 1.0, "b": 0.0}
    assert first.usage["retries"] == 1 and first.usage["cost"] == pytest.approx(0.002)
    assert all(r["usage"]["calls"] == 1 for r in first.results)
    again = evalyard.evaluate(CASES, ["polite"], app=tiny, judge_model=model)
    assert again.usage["cache_hits"] == 2 and [r["value"] for r in again.results] == [r["value"] for r in first.results]


def test_structured_output_and_p_yes(tiny, rules):
    model = rules([{"contains": "JSON", "content": {"reasoning": "kind words", "answer": "yes"}},
                   {"content": "Yes", "logprobs": [{"Yes": -0.2, "No": -1.8}]}])
    structured = evalyard.evaluate(CASES[:1], ["polite:structured=true"], app=tiny, judge_model=model)
    assert structured.results[0]["value"] == 1.0 and structured.results[0]["details"]["reasoning"] == "kind words"
    scored = evalyard.evaluate(CASES[:1], ["polite:logprobs=true"], app=tiny, judge_model=model)
    assert scored.results[0]["value"] == pytest.approx(0.832, abs=1e-3)
    assert scored.results[0]["details"]["value_from"] == "P(yes) of the first answer token"
