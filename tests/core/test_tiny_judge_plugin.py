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


def test_a_changed_template_makes_compare_warn(tiny, rules, tmp_path):
    """The plugin never mentions fingerprints: the judge service puts its model and template hash in
    the scorer's, so a run judged with a user's own tiny/polite.jinja is flagged by `compare`."""
    from click.testing import CliRunner

    from evalyard.cli import cli

    model = rules([{"content": "ANSWER: yes"}])
    base = evalyard.evaluate(CASES, ["polite"], app=tiny, judge_model=model)
    [spec] = tiny.open_store().get_run(base.run_id).scorers
    assert spec["fingerprint_data"]["model"] == model and spec["fingerprint_data"]["template"] == "tiny/polite"
    same = evalyard.evaluate(CASES, ["polite"], app=tiny, judge_model=model)
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "polite.jinja").write_text(
        "---\nfields: [input, candidate]\nanswer: binary\n---\n{{ input }}\n{{ candidate }}\nIs this reply polite?\n")
    tiny.use_prompt_dirs([str(tmp_path)])
    changed = evalyard.evaluate(CASES, ["polite"], app=tiny, judge_model=model)
    quiet = CliRunner().invoke(cli, ["compare", base.run_id, same.run_id], obj=tiny, catch_exceptions=False)
    assert quiet.exit_code == 0 and "WARNING" not in quiet.output
    warned = CliRunner().invoke(cli, ["compare", base.run_id, changed.run_id], obj=tiny, catch_exceptions=False)
    assert "WARNING: scorer 'polite' differs between the runs in template_hash" in warned.output
