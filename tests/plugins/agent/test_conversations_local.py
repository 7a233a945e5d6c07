"""Simulated conversations on the real local model, offline: qwen2.5-coder-1.5b plays both the
assistant under test and the simulated user, through the CLI, the model layer and the local-model
plugin. The fast tier replays the model's recorded answers (``answering_model``)."""

from __future__ import annotations

import json
import sqlite3

from click.testing import CliRunner

from testutil import write
from evalyard.cli import cli

GOALS = [
    {"id": "pasta", "input": "get a recipe for a quick vegetarian pasta for two",
     "metadata": {"persona": "a tired parent after work"},
     "messages": [{"role": "system", "content": "You are a cooking assistant. Answer in under 60 words."}]},
    {"id": "reverse", "input": "learn how to reverse a list in Python", "metadata": {"persona": "a beginner"}},
    {"id": "refund", "input": "get a refund for a broken kettle, order 4411",
     "messages": [{"role": "user", "content": "Hi, my kettle arrived broken."}]},
]


def test_simulated_conversations_on_the_local_model(answering_model, isolated_home, tmp_path, monkeypatch):
    from evalyard import Application

    monkeypatch.setenv("EVALYARD_LOAD_PLUGINS", "agent,local")
    data = write(tmp_path / "goals.jsonl", "\n".join(json.dumps(goal) for goal in GOALS))
    suite = write(tmp_path / "simulated.yaml", f"""
name: simulated-local
data: {data}
generator:
  name: agent/simulated_user
  model: {answering_model}
  user_model: {answering_model}
  max_turns: 2
  max_tokens: 120
scorers: ["agent/tool_calls:mode=ignore,max_turns=2"]
""")
    app = Application()
    result = CliRunner().invoke(cli, ["run", str(suite), "--json"], obj=app)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["scorers"]["agent/tool_calls"]["errors"] == 0
    with sqlite3.connect(isolated_home / "evalyard.db") as connection:  # the default database
        rows = connection.execute("SELECT case_id, dialogue, details, error FROM candidates").fetchall()
    assert len(rows) == 3
    for case_id, dialogue, details, error in rows:
        assert error is None, (case_id, error)
        details = json.loads(details)
        messages = [m for m in json.loads(dialogue)["messages"] if m["role"] != "system"]
        assert [m["role"] for m in messages] == ["user", "assistant"] * details["user_turns"], case_id
        assert 1 <= details["user_turns"] <= 2 and details["stopped"] in ("stop", "max_turns", "user_silent")
        # an empty line of the simulated user ends the conversation: it is never stored as a turn
        assert all(m["content"].strip() for m in messages if m["role"] == "user"), case_id
    refund = json.loads(next(d for c, d, *_ in rows if c == "refund"))["messages"]
    assert refund[0] == {"role": "user", "content": "Hi, my kettle arrived broken."}  # the scripted opening

    again = CliRunner().invoke(cli, ["run", str(suite), "--json"], obj=Application())
    assert again.exit_code == 0, again.output
    usage = json.loads(again.stdout)["usage"]
    assert usage["calls"] > 0 and usage["cache_hits"] == usage["calls"]  # the same conversations, from the cache


def test_the_local_model_calls_a_registered_tool_offline(qwen_models, isolated_home, tmp_path, monkeypatch):
    """agent/conversation on the real local model with tools: llama.cpp renders the case's ``tools``
    with the model's own chat template and parses the call it writes; the registered function
    answers it, and the model's reply uses the result."""
    from evalyard import Application

    monkeypatch.setenv("EVALYARD_LOAD_PLUGINS", "agent,local")
    tools = write(tmp_path / "weather_tools.py", (
        "def get_weather(city):\n"
        "    return {'city': city, 'temperature_c': 14, 'sky': 'light rain'}\n"))
    weather = {"type": "function", "function": {
        "name": "get_weather", "description": "The current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
    case = {"id": "paris", "tools": [weather],
            "expected_tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
            "messages": [{"role": "system", "content": "You are a weather assistant. Use the tools to answer."},
                         {"role": "user", "content": "What is the weather in Paris right now?"}]}
    data = write(tmp_path / "weather.jsonl", json.dumps(case))
    suite = write(tmp_path / "tools.yaml", f"""
name: local-tools
data: {data}
generator:
  name: agent/conversation
  model: local/qwen2.5-coder-1.5b
  max_tokens: 120
  functions: {{get_weather: "{tools}:get_weather"}}
scorers: ["agent/tool_calls:mode=strict"]
""")
    result = CliRunner().invoke(cli, ["run", str(suite), "--json"], obj=Application())
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["scorers"]["agent/tool_calls"]["mean"] == 1.0
    with sqlite3.connect(isolated_home / "evalyard.db") as connection:
        dialogue, details = connection.execute("SELECT dialogue, details FROM candidates").fetchone()
    messages, details = json.loads(dialogue)["messages"], json.loads(details)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    call = messages[2]["tool_calls"][0]
    assert call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}
    assert messages[3]["tool_call_id"] == call["id"] and json.loads(messages[3]["content"])["temperature_c"] == 14
    assert "14" in messages[4]["content"]  # the answer reads the tool's result
    assert details["function_calls"] == 1 and details["model_calls"] == 2
