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
