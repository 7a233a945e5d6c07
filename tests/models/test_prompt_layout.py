"""Prompts laid out for prefix caches: in every built-in, judge and Trust-Score template everything
that does not depend on the case (system text, how the markers work, the answer format, the
template's instructions) comes before the case's first field, so two cases share the whole static
part; after the data only a one-line restatement. Anthropic models get a cache mark on it."""

from __future__ import annotations

import json

import pytest

from evalyard import Case
from evalyard.app import plugin_templates
from evalyard.runtime import Runtime

#: The checklist plugin's templates reproduce AutoChecklist's prompts and keep their layout.
LAID_OUT = ("evalyard", "judge", "trust")


def case(n: int) -> Case:
    return Case(id=f"c{n}", input=f"Question number {n} about topic {n}?", candidate=f"Answer {n}, a claim.",
                reference=f"Reference {n}.", context=[f"Passage {n} one.", f"Passage {n} two."],
                metadata={"claim": f"claim {n}", "question": f"q{n}", "keyphrases": [f"k{n}"],
                          "questions": [f"q{n}?"], "response_a": f"A{n}", "response_b": f"B{n}",
                          # the Ragas steps' own fields (judge/ragas_*)
                          "answer": f"answer {n}", "passage": f"passage {n}", "context": f"context {n}",
                          "reference": f"reference {n}", "text": f"text {n}", "atomicity": "low", "coverage": "low",
                          "n": 3, "statements": [f"statement {n}"], "passages": [f"passage {n} a"]})


def templates(app):
    library = Runtime(plugin_templates=plugin_templates(app.registry)).prompts
    found = []
    for template in library.list():
        namespace = template.source.removeprefix("plugin ") if template.source.startswith("plugin") else "evalyard"
        if namespace in LAID_OUT:
            found.append(template)
    return found


def flat(messages) -> str:
    return "\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)


@pytest.fixture
def library_templates(installed_plugins, app):
    return templates(app)


def test_the_static_part_of_every_template_precedes_the_first_case_field(library_templates):
    assert len(library_templates) >= 15
    for template in library_templates:
        for reasoning in (True, False):
            structured = template.answer.kind == "json"  # as ask() renders them
            one = template.render(case(1), reasoning=reasoning, structured=structured)
            two = template.render(case(2), reasoning=reasoning, structured=structured)
            first, second = flat(one.messages), flat(two.messages)
            static_1, static_2 = first.split(f"<data-{one.nonce}>", 1)[0], second.split(f"<data-{two.nonce}>", 1)[0]
            assert static_1 == static_2, f"{template.name}: the part before the first case field differs"
            tail = first.rsplit(f"</data-{one.nonce}>", 1)[1].strip()
            assert "\n\n" not in tail and len(tail) < 300, f"{template.name}: instructions after the data: {tail!r}"
            if template.answer.kind not in ("text", "json"):
                assert "ANSWER" in static_1 or "Reply with only" in static_1, template.name


def test_two_cases_share_nearly_all_of_a_long_rubric(library_templates):
    """With the old layout only the short system message was shared; now the whole static part is."""
    by_name = {t.name: t for t in library_templates}
    template = by_name["judge/qa_correctness"] if "judge/qa_correctness" in by_name else by_name["qa_correctness"]
    first = flat(template.render(case(1)).messages)
    second = flat(template.render(case(2)).messages)
    shared = next(i for i, (a, b) in enumerate(zip(first, second)) if a != b)
    assert shared > 0.6 * len(first)


def test_anthropic_models_get_a_cache_mark_on_the_static_part(app, rules):
    """Through the real layer and litellm (its mock response, no network)."""
    from evalyard.models import ModelLayer
    from evalyard.models.background import shared_loop
    from evalyard.prompting.ask import ask
    from evalyard.prompting.library import PromptLibrary

    template = PromptLibrary().get("correctness")
    layer = ModelLayer()
    judgement = shared_loop().run(ask(layer, "anthropic/claude-3-5-haiku-20241022", template, case(1),
                                      params={"mock_response": "Same facts.\nANSWER: yes"}))
    assert judgement.value == 1.0 and layer.usage.to_dict()["calls"] == 1
    (record,) = layer.cache._records.values()  # the call as sent: its cache record keeps the messages
    system = record.request["messages"][0]
    assert system["role"] == "system" and isinstance(system["content"], list)
    assert system["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert json.dumps(system).count("cache_control") == 1


def test_cached_prompt_tokens_are_recorded_and_priced_at_the_cached_rate(app, tmp_path, fake_server, monkeypatch):
    """Through litellm and the fake server, whose prompt cache works as OpenAI's (here from 1 token)."""
    import evalyard
    from testutil import write

    server = fake_server(prompt_cache_min=1)
    monkeypatch.setenv("FAKE_KEY", "sk-fake")
    app = evalyard.Application()  # the application reads the key's variable when it starts
    write(tmp_path / "cases.jsonl", "".join(json.dumps(
        {"id": f"q{i}", "input": f"question {i}", "candidate": f"answer {i}", "reference": f"answer {i}"}) + "\n"
        for i in range(4)))
    suite = write(tmp_path / "suite.yaml", (
        f"name: cached\ndata: cases.jsonl\nscorers:\n  - judge\nmodels:\n  openai/gpt-4o-mini:\n"
        f"    api_base: {server.base_url}\n    api_key_env: FAKE_KEY\n"))
    evalyard.register_prompt_scorer("judge", template="correctness", app=app)
    run = evalyard.evaluate(str(suite), app=app, judge_model="openai/gpt-4o-mini", concurrency=1)
    usage = run.usage
    assert usage["cached_prompt_tokens"] > 0.5 * usage["prompt_tokens"] * 3 / 4  # all but the first call reuse
    import litellm

    info = litellm.get_model_info(model="openai/gpt-4o-mini")
    fresh = usage["prompt_tokens"] - usage["cached_prompt_tokens"]
    expected = (fresh * info["input_cost_per_token"] + usage["cached_prompt_tokens"] * info["cache_read_input_token_cost"]
                + usage["completion_tokens"] * info["output_cost_per_token"])
    assert usage["cost"] == pytest.approx(expected, rel=1e-6)
    per_result = [r["usage"]["cached_prompt_tokens"] for r in run.results]
    assert sum(per_result) == usage["cached_prompt_tokens"]
