"""Generated conversations through the CLI: the scripted model (a litellm provider answering from
rules, tool calls included) plays the assistant under test and the simulated user; the run stores
each conversation and the agent scorers judge the generated turns, not the case's recorded ones."""

from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner

from testutil import count_rows, start_then_kill_9, write
from evalyard.cli import cli

WEATHER_TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def invoke(app, *args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj=app, catch_exceptions=False)


def recorded(case_id, question, city, result):
    """A recorded conversation: the user asks, the recorded assistant called the tool, got ``result``."""
    return {"id": case_id, "tools": [WEATHER_TOOL],
            "expected_tool_calls": [{"name": "get_weather", "arguments": {"city": city}}],
            "messages": [
                {"role": "system", "content": "You are a weather bot."},
                {"role": "user", "content": question},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "r1", "type": "function",
                     "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}]},
                {"role": "tool", "tool_call_id": "r1", "content": result},
                {"role": "assistant", "content": "recorded answer"},
                {"role": "user", "content": "Thanks! And tomorrow?"},
                {"role": "assistant", "content": "recorded second answer"}]}


ASSISTANT_RULES = """
- {contains: "And tomorrow?", content: "Tomorrow looks the same."}
- {contains: "14C rain", content: "It is 14C and raining in Oslo."}
- {contains: "25C sun", content: "Sunny, 25C in Rome."}
- {contains: '{"error": ', content: "I could not get the weather."}
- {contains: "in Oslo", tool_calls: [{name: get_weather, arguments: {city: Oslo}}]}
- {contains: "in Rome", tool_calls: [{name: get_weather, arguments: {city: Madrid}}]}
"""


def stored(db):
    """The generated conversation of each case."""
    with sqlite3.connect(db) as connection:
        return {case_id: (json.loads(value) if value else None) for case_id, value in connection.execute(
            "SELECT case_id, dialogue FROM candidates ORDER BY case_id")}


@pytest.fixture
def weather(tmp_path):
    data = write(tmp_path / "chats.jsonl", "\n".join(json.dumps(c) for c in [
        recorded("oslo", "What is the weather in Oslo?", "Oslo", "14C rain"),
        recorded("rome", "What is the weather in Rome?", "Rome", "25C sun")]))
    rules = write(tmp_path / "assistant.yaml", ASSISTANT_RULES)
    return data, rules


def test_user_turns_played_tool_calls_answered_from_the_recording(app, tmp_path, weather):
    data, rules = weather
    db = tmp_path / "runs.db"
    result = invoke(app, "run", data, "--db", f"sqlite:///{db}", "--json",
                    "--generator", f"agent/conversation:model=scripted/{rules}",
                    "-s", "agent/tool_calls:mode=strict")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    # Oslo: the generated call matches the expected one; Rome: the model asked for Madrid
    assert summary["scorers"]["agent/tool_calls"]["mean"] == pytest.approx(0.5)
    conversations = stored(db)
    oslo = conversations["oslo"]["messages"]
    assert [m["role"] for m in oslo] == ["system", "user", "assistant", "tool", "assistant", "user", "assistant"]
    assert oslo[3]["content"] == "14C rain"  # the recorded result of the same call
    assert oslo[3]["tool_call_id"] == oslo[2]["tool_calls"][0]["id"]
    assert oslo[4]["content"] == "It is 14C and raining in Oslo."
    assert oslo[6]["content"] == "Tomorrow looks the same."  # generated, not the recorded second answer
    rome = conversations["rome"]["messages"]
    # Madrid was never recorded, but the recording has one get_weather result: it answers the call
    assert json.loads(rome[2]["tool_calls"][0]["function"]["arguments"]) == {"city": "Madrid"}
    assert rome[3]["content"] == "25C sun"
    with sqlite3.connect(db) as connection:
        texts = dict(connection.execute("SELECT case_id, text FROM candidates").fetchall())
        details = dict(connection.execute("SELECT case_id, details FROM candidates").fetchall())
    assert texts == {"oslo": "Tomorrow looks the same.", "rome": "Tomorrow looks the same."}  # the last answer
    assert json.loads(details["oslo"])["recorded_results"] == 1
    assert json.loads(details["oslo"])["model_calls"] == 3


def test_registered_functions_answer_calls_and_their_errors_reach_the_model(app, tmp_path, weather):
    data, rules = weather
    tools = write(tmp_path / "weather_tools.py", (
        "def get_weather(city):\n"
        "    if city == 'Madrid':\n"
        "        raise LookupError('no station in ' + city)\n"
        "    return {'Oslo': '14C rain'}[city]\n"))
    suite = write(tmp_path / "suite.yaml", f"""
name: live-tools
data: {data}
generator:
  name: agent/conversation
  model: scripted/{rules}
  functions: {{get_weather: "{tools}:get_weather"}}
scorers: [agent/tool_calls]
""")
    db = tmp_path / "runs.db"
    result = invoke(app, "run", suite, "--db", f"sqlite:///{db}")
    assert result.exit_code == 0, result.output
    rome = stored(db)["rome"]["messages"]
    assert json.loads(rome[3]["content"]) == {"error": "LookupError: no station in Madrid"}
    assert rome[4]["content"] == "I could not get the weather."
    with sqlite3.connect(db) as connection:
        details = dict(connection.execute("SELECT case_id, details FROM candidates").fetchall())
    assert json.loads(details["oslo"])["function_calls"] == 1
    assert json.loads(details["rome"])["tool_errors"] == 1


def test_a_function_that_cannot_be_loaded_is_refused_before_anything_is_stored(app, tmp_path, weather):
    data, rules = weather
    db = tmp_path / "runs.db"
    result = invoke(app, "run", data, "--db", f"sqlite:///{db}", "-s", "agent/tool_calls",
                    "--generator", f"agent/conversation:model=scripted/{rules}")
    assert result.exit_code == 0
    suite = write(tmp_path / "bad.yaml", f"""
name: bad
data: {data}
generator: {{name: agent/conversation, model: scripted/{rules}, functions: {{get_weather: "nosuchmodule:f"}}}}
scorers: [agent/tool_calls]
""")
    before = stored(db)
    result = invoke(app, "run", suite, "--db", f"sqlite:///{db}")
    assert result.exit_code == 2
    assert "functions.get_weather: cannot load 'nosuchmodule:f'" in result.output
    assert stored(db) == before


def test_epochs_keep_each_conversation(app, tmp_path, weather):
    data, rules = weather
    db = tmp_path / "runs.db"
    result = invoke(app, "run", data, "--db", f"sqlite:///{db}", "--json", "--epochs", "2",
                    "--generator", f"agent/conversation:model=scripted/{rules}", "-s", "agent/tool_calls")
    assert result.exit_code == 0, result.output
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT case_id, epoch, dialogue FROM trial_outputs ORDER BY case_id, epoch").fetchall()
        trials = connection.execute("SELECT case_id, epoch, value FROM trials ORDER BY case_id, epoch").fetchall()
    assert [(c, e) for c, e, _ in rows] == [("oslo", 0), ("oslo", 1), ("rome", 0), ("rome", 1)]
    assert all(len(json.loads(d)["messages"]) == 7 for _, _, d in rows)
    assert trials == [("oslo", 0, 1.0), ("oslo", 1, 1.0), ("rome", 0, 0.0), ("rome", 1, 0.0)]


SIMULATED_RULES = """
- {template: agent/simulated_user, regex: "(?s)User: Two seats.*Assistant: Booked", content: "DONE."}
- {template: agent/simulated_user, regex: "Assistant: How many", content: "\\"Two seats, please.\\"\\n\\nAssistant: Booked!"}
- {template: agent/simulated_user, contains: "has not started: write", regex: "a nervous flyer", content: "User: I want to fly to Rome."}
- {template: agent/simulated_user, contains: "has not started: write", content: "Hi."}
- {template: agent/simulated_user, content: "Hello?"}
- {contains: "Two seats", content: "Booked: two seats to Rome."}
- {contains: "fly to Rome", content: "How many seats?"}
- {content: "Hello! How can I help?"}
"""


def test_simulated_user_talks_until_it_is_done_or_out_of_turns(app, tmp_path):
    data = write(tmp_path / "goals.jsonl", "\n".join(json.dumps(c) for c in [
        {"id": "book", "input": "book two seats to Rome", "metadata": {"persona": "a nervous flyer"}},
        {"id": "chat", "input": "chat a little"}]))
    rules = write(tmp_path / "rules.yaml", SIMULATED_RULES)
    db = tmp_path / "runs.db"
    result = invoke(app, "run", data, "--db", f"sqlite:///{db}", "-s", "agent/tool_calls:mode=ignore",
                    "--generator", f"agent/simulated_user:model=scripted/{rules},user_model=scripted/{rules},"
                                   "max_turns=3")
    assert result.exit_code == 0, result.output
    conversations = stored(db)
    assert conversations["book"]["messages"] == [
        {"role": "user", "content": "I want to fly to Rome."},  # the label the model wrote is dropped
        {"role": "assistant", "content": "How many seats?"},
        {"role": "user", "content": "Two seats, please."},  # not the assistant's line it went on to write
        {"role": "assistant", "content": "Booked: two seats to Rome."}]
    assert [m["role"] for m in conversations["chat"]["messages"]] == ["user", "assistant"] * 3
    with sqlite3.connect(db) as connection:
        details = {c: json.loads(d) for c, d in connection.execute("SELECT case_id, details FROM candidates")}
    assert (details["book"]["stopped"], details["book"]["user_turns"]) == ("stop", 2)
    assert (details["chat"]["stopped"], details["chat"]["user_turns"]) == ("max_turns", 3)


def test_simulated_user_needs_a_model_to_play_it(app, tmp_path):
    data = write(tmp_path / "goals.jsonl", json.dumps({"id": "g", "input": "book"}))
    rules = write(tmp_path / "rules.yaml", SIMULATED_RULES)
    result = invoke(app, "run", data, "--db", f"sqlite:///{tmp_path / 'runs.db'}", "-s", "agent/tool_calls:mode=ignore",
                    "--generator", f"agent/simulated_user:model=scripted/{rules}")
    assert result.exit_code == 2
    assert "needs a user_model" in result.output
    assert not (tmp_path / "runs.db").exists() or stored(tmp_path / "runs.db") == {}


def test_calls_nobody_can_answer_and_a_model_that_never_stops_calling(app, tmp_path):
    data = write(tmp_path / "chat.jsonl", json.dumps(
        {"id": "loop", "tools": [WEATHER_TOOL], "messages": [{"role": "user", "content": "Weather in Oslo?"}]}))
    rules = write(tmp_path / "rules.yaml", '- {contains: "Oslo", tool_calls: [{name: get_weather, arguments: {city: Oslo}}]}')
    db = tmp_path / "runs.db"
    result = invoke(app, "run", data, "--db", f"sqlite:///{db}", "-s", "agent/tool_calls:mode=ignore,max_steps=1",
                    "--generator", f"agent/conversation:model=scripted/{rules},max_steps=2")
    assert result.exit_code == 0, result.output
    messages = stored(db)["loop"]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant", "tool"]
    assert json.loads(messages[2]["content"]) == {"error": 'no result is available for get_weather({"city": "Oslo"})'}
    with sqlite3.connect(db) as connection:
        (details,) = connection.execute("SELECT details FROM candidates").fetchone()
        (value,) = connection.execute("SELECT value FROM results").fetchone()
    assert json.loads(details)["stopped"] == "max_steps"
    assert json.loads(details)["unanswered_calls"] == 2
    assert value == 0.0  # two calls where at most one was allowed: the scorer saw the generated turns


def test_a_suite_generator_that_is_not_a_name_is_refused_with_its_line(app, tmp_path, weather):
    data, _ = weather
    suite = write(tmp_path / "suite.yaml", f"name: s\ndata: {data}\nscorers: [agent/tool_calls]\ngenerator: [model]\n")
    result = invoke(app, "run", suite, "--db", f"sqlite:///{tmp_path / 'runs.db'}")
    assert result.exit_code == 2
    assert f"{suite}:4: field 'generator': expected NAME[:key=value,...] or a mapping" in result.output
    assert not (tmp_path / "runs.db").exists()


def test_a_grid_compares_models_playing_the_suites_conversations(app, tmp_path, weather):
    """-m A -m B names the models under test: the suite's conversation generator plays each cell."""
    data, rules = weather
    careless = write(tmp_path / "careless.yaml", ASSISTANT_RULES.replace("{city: Oslo}", "{city: Bergen}"))
    suite = write(tmp_path / "suite.yaml", f"""
name: weather-grid
data: {data}
generator: {{name: agent/conversation, max_steps: 3}}
scorers: [agent/tool_calls]
""")
    db = tmp_path / "runs.db"
    result = invoke(app, "run", suite, "--db", f"sqlite:///{db}", "--json",
                    "-m", f"scripted/{rules}", "-m", f"scripted/{careless}")
    assert result.exit_code == 0, result.output
    cells = json.loads(result.stdout)["comparison"]["cells"]
    assert [c["scorers"]["agent/tool_calls"]["mean"] for c in cells] == [0.5, 0.0]
    for cell, model in zip(cells, (rules, careless)):
        shown = json.loads(invoke(app, "runs", "show", cell["run_id"], "--db", f"sqlite:///{db}", "--json").output)
        assert shown["generator"]["name"] == "agent/conversation"
        config = shown["generator"]["config"]
        assert (config["max_steps"], config["model"]) == (3, f"scripted/{model}")
    single = invoke(app, "run", suite, "--db", f"sqlite:///{db}", "--json", "--model", f"scripted/{careless}")
    assert json.loads(single.stdout)["scorers"]["agent/tool_calls"]["mean"] == 0.0


def test_kill_9_mid_generation_then_resume_keeps_every_conversation_once(tmp_path, cli_env, evalyard_exe,
                                                                          isolated_home):
    """Conversations being generated when the run is killed with SIGKILL: the resumed run stores
    every conversation once and asks the provider again for at most the call in flight."""
    import subprocess

    cases = [recorded(f"c{n:02d}", f"What is the weather in Oslo? ({n})", "Oslo", "14C rain") for n in range(12)]
    data = write(tmp_path / "chats.jsonl", "\n".join(json.dumps(c) for c in cases))
    rules = write(tmp_path / "slow.yaml", "\n".join(
        line.rstrip("}") + ", delay_ms: 40}" for line in ASSISTANT_RULES.strip().splitlines()))
    log = tmp_path / "calls.log"
    env = {**cli_env, "EVALYARD_SCRIPTED_LOG": str(log)}
    db = isolated_home / "evalyard.db"
    command = [evalyard_exe, "run", str(data), "-s", "agent/tool_calls", "-j", "1", "--json",
               "--generator", f"agent/conversation:model=scripted/{rules}"]

    def generated():
        with sqlite3.connect(db) as con:
            return con.execute("select count(*) from candidates where dialogue is not null").fetchone()[0]

    start_then_kill_9(command, env, lambda: count_rows(db, "candidates") > 0 and generated() >= 3)
    assert generated() < 12
    with sqlite3.connect(db) as con:
        run_id = con.execute("select id from runs").fetchone()[0]
    done = subprocess.run([evalyard_exe, "run", "--resume", run_id, "--json"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["scorers"]["agent/tool_calls"]["mean"] == 1.0
    assert (generated(), count_rows(db, "results")) == (12, 12)
    with sqlite3.connect(db) as con:
        lengths = {len(json.loads(d)["messages"]) for (d,) in con.execute("select dialogue from candidates")}
    assert lengths == {7}
    answered = len(log.read_text().splitlines())
    assert 3 * 12 <= answered <= 3 * 12 + 1  # three calls a conversation; at most the one in flight again


def test_the_plan_says_a_conversations_calls_are_not_known_before_it_runs(app, tmp_path, weather):
    data, rules = weather
    result = invoke(app, "run", data, "--db", f"sqlite:///{tmp_path / 'runs.db'}", "--plan", "--json",
                    "-s", "agent/tool_calls", "--generator", f"agent/conversation:model=scripted/{rules}")
    assert result.exit_code == 0, result.output
    line = next(line for line in json.loads(result.stdout)["plan"]["lines"] if line["kind"] == "generator")
    assert line["notes"] == ["2 cases: this generator's calls depend on the model's answers, so they are not known "
                             "before it runs: calls, tokens and cost unknown"]
    assert not (tmp_path / "runs.db").exists() or count_rows(tmp_path / "runs.db", "runs") == 0
