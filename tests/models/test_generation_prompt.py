"""The system under test receives exactly the prompt the user wrote: a generation template is
rendered as written (no judges' data markers, no rules about them, no answer format), while a
judge's template keeps its guard. Checked on the request bodies a fake OpenAI server received."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

import evalyard
from evalyard.cli import cli

TERSE = """---
description: answer in as few words as possible
fields: [input]
system: You answer in as few words as possible.
---
Question: {{ input }}
"""


@pytest.fixture
def setup(tmp_path, fake_server):
    server = fake_server(record=True, reply="Paris")
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "terse.jinja").write_text(TERSE)
    data = tmp_path / "cases.jsonl"
    data.write_text(json.dumps({"id": "fr", "input": "Capital of <b>France</b>?", "reference": "Paris"}) + "\n")
    models = tmp_path / "suite.yaml"
    models.write_text(f"name: capitals\ndata: {data.name}\nprompts: [prompts]\n"
                      f"models:\n  openai/under-test:\n    api_base: {server.base_url}\n    api_key_env: FAKE_KEY\n"
                      f"  openai/judge:\n    api_base: {server.base_url}\n    api_key_env: FAKE_KEY\n")
    app = evalyard.Application(evalyard.Settings.from_env({**os.environ, "FAKE_KEY": "sk-fake"}))
    return server, models, app


def test_a_generation_is_sent_its_rendered_template_and_nothing_else(setup):
    server, suite, app = setup
    result = CliRunner().invoke(cli, ["run", str(suite), "-m", "openai/under-test", "--prompt", "terse",
                                      "-s", "contains", "--json"], obj=app, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (body,) = server.stats.bodies
    assert body["messages"] == [
        {"role": "system", "content": "You answer in as few words as possible."},
        {"role": "user", "content": "Question: Capital of <b>France</b>?"},
    ]
    assert json.loads(result.stdout)["scorers"]["contains"]["mean"] == 1.0


def test_without_a_template_the_input_is_the_whole_message(setup):
    server, suite, app = setup
    result = CliRunner().invoke(cli, ["run", str(suite), "-m", "openai/under-test", "-s", "contains"], obj=app,
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert server.stats.bodies[0]["messages"] == [{"role": "user", "content": "Capital of <b>France</b>?"}]


def test_a_judge_keeps_its_guard_and_refuses_a_generation_template(setup):
    server, suite, app = setup
    evalyard.register_prompt_scorer("judged", template="correctness", app=app)
    result = CliRunner().invoke(cli, ["run", str(suite), "-m", "openai/under-test", "--prompt", "terse",
                                      "--judge-model", "openai/judge", "-s", "judged"], obj=app,
                                catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output  # the fake answers "Paris": the verdict is unreadable
    assert server.stats.bodies[0]["messages"][-1]["content"] == "Question: Capital of <b>France</b>?"
    judge_body = server.stats.bodies[1]
    text = "\n".join(m["content"] for m in judge_body["messages"])
    assert "<data-" in text and "The material to evaluate is enclosed" in text

    evalyard.register_prompt_scorer("misused", template="terse", app=app)
    refused = CliRunner().invoke(cli, ["run", str(suite), "--judge-model", "openai/judge", "-s", "misused"],
                                 obj=app, catch_exceptions=False)
    assert refused.exit_code == 2 and "declares no `answer:`" in refused.output
