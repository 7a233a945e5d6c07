"""The agent plugin as users get it: installed, its scorers run by the CLI on conversation files
(examples/agents.yaml among them), bad conversations refused in one line with nothing stored,
and each check of ``agent/tool_calls`` on conversations made for it."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from testutil import ROOT, write
from evalyard import Case
from evalyard.cli import cli
from evalyard_agent.tool_calls import ToolCalls

FLIGHTS = {"type": "function", "function": {"name": "book", "parameters": {
    "type": "object", "properties": {"flight": {"type": "string"}, "seats": {"type": "integer", "minimum": 1}},
    "required": ["flight", "seats"], "additionalProperties": False}}}


def invoke(app, *args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj=app, catch_exceptions=False)


def chat(*calls, turns=1):
    """A conversation whose assistant made ``calls`` (name, arguments) in ``turns`` messages."""
    messages = [{"role": "user", "content": "please"}]
    groups = [calls[k::turns] for k in range(turns)]
    for k, group in enumerate(groups):
        tool_calls = [{"id": f"c{k}-{n}", "type": "function",
                       "function": {"name": name, "arguments": json.dumps(arguments)}}
                      for n, (name, arguments) in enumerate(group)]
        messages.append({"role": "assistant", "content": None, "tool_calls": tool_calls})
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in tool_calls]
    messages.append({"role": "assistant", "content": "done"})
    return messages


def case(calls, expected=None, turns=1, tools=None):
    return Case(id="c", messages=chat(*calls, turns=turns), tools=tools,
                expected_tool_calls=[{"name": n, "arguments": a} for n, a in expected] if expected is not None else None)


def test_example_suite_through_the_cli(app, monkeypatch):
    monkeypatch.chdir(ROOT)
    result = invoke(app, "run", "examples/agents.yaml", "--json")
    assert result.exit_code == 0, result.output
    scorers = json.loads(result.stdout)["scorers"]
    assert {name: s["mean"] for name, s in scorers.items()} == pytest.approx(
        {"agent/tool_calls": 4 / 6, "agent/trajectory_match": 5 / 6, "agent/tool_call_accuracy": 4 / 6})
    exported = invoke(app, "runs", "export", json.loads(result.stdout)["run_id"])
    rows = {(r["case_id"], r["scorer"]): r for r in map(json.loads, exported.stdout.splitlines())}
    failures = rows["refund-forbidden-tool", "agent/tool_calls"]["details"]["failures"]
    assert "call 2 uses the forbidden tool 'delete_account'" in failures
    failures = rows["book-without-search", "agent/tool_calls"]["details"]["failures"]
    assert "call 1 (book_flight): passengers: '1' is not of type 'integer'" in failures
    # Ragas compares arguments as text: "1" and 1 are the same to it
    assert rows["book-without-search", "agent/tool_call_accuracy"]["value"] == 1.0


def test_the_field_map_reads_conversations_under_other_names(app, tmp_path, isolated_home):
    record = {"id": "a", "dialogue": chat(("book", {"flight": "BA1", "seats": 2})),
              "gold": [{"name": "book", "arguments": {"flight": "BA1", "seats": 2}}]}
    path = write(tmp_path / "chats.jsonl", json.dumps(record) + "\n")
    result = invoke(app, "run", path, "--field", "messages=dialogue", "--field", "expected_tool_calls=gold",
                    "-s", "agent/trajectory_match", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["scorers"]["agent/trajectory_match"]["mean"] == 1.0


def assert_refused(result, isolated_home, *fragments):
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert not (isolated_home / "evalyard.db").exists()  # nothing stored


GOOD = {"id": "ok", "messages": chat(("book", {"flight": "BA1", "seats": 2})),
        "expected_tool_calls": [{"name": "book", "arguments": {"flight": "BA1", "seats": 2}}], "tools": [FLIGHTS]}
BAD_FILES = [
    ("arguments not JSON", {"messages": [{"role": "assistant", "tool_calls": [
        {"id": "x", "type": "function", "function": {"name": "book", "arguments": "{flight: BA1}"}}]}]},
     "messages[0].tool_calls[0].function.arguments", "arguments are not JSON"),
    ("a result with no call", {"messages": [{"role": "user", "content": "hi"},
                                            {"role": "tool", "tool_call_id": "nope", "content": "42"}]},
     "messages[1].tool_call_id", "no earlier tool call"),
    ("unknown role", {"messages": [{"role": "human", "content": "hi"}]}, "messages[0].role", "unknown role 'human'"),
]


@pytest.mark.parametrize("record,field,message", [b[1:] for b in BAD_FILES], ids=[b[0] for b in BAD_FILES])
def test_a_bad_conversation_is_refused_in_one_line_and_nothing_is_stored(app, tmp_path, isolated_home, record,
                                                                          field, message):
    path = write(tmp_path / "bad.jsonl", json.dumps(GOOD) + "\n" + json.dumps({"id": "bad", **record}) + "\n")
    result = invoke(app, "run", path, "-s", "agent/tool_calls")
    assert_refused(result, isolated_home, f"bad.jsonl:2: field {field!r}", message)


@pytest.mark.parametrize("scorer,drop,field", [
    ("agent/trajectory_match", "expected_tool_calls", "expected_tool_calls"),
    ("agent/tool_call_accuracy", "messages", "messages"),
    ("agent/tool_calls:schema=true", "tools", "tools"),
])
def test_a_case_without_a_required_field_names_it(app, tmp_path, isolated_home, scorer, drop, field):
    missing = {k: v for k, v in GOOD.items() if k != drop}
    path = write(tmp_path / "c.jsonl", json.dumps(GOOD) + "\n" + json.dumps(dict(missing, id="m")) + "\n")
    result = invoke(app, "run", path, "-s", scorer)
    assert_refused(result, isolated_home, f"c.jsonl:2: field {field!r}", "case 'm' has no")


def test_mode_ignore_needs_no_reference(tmp_path, app, isolated_home):
    record = {k: v for k, v in GOOD.items() if k != "expected_tool_calls"}
    path = write(tmp_path / "c.jsonl", json.dumps(record) + "\n")
    result = invoke(app, "run", path, "-s", "agent/tool_calls:mode=ignore,forbidden=delete|drop,max_steps=1",
                    "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["scorers"]["agent/tool_calls"]["mean"] == 1.0


A, A2, B = ("a", {"x": 1}), ("a", {"x": 1, "y": 2}), ("b", {})


@pytest.mark.parametrize("mode,calls,expected,passed", [
    ("strict", [A, B], [A, B], True),
    ("strict", [B, A], [A, B], False),
    ("unordered", [B, A], [A, B], True),
    ("unordered", [A, A, B], [A, B], False),  # a repeated call is one too many
    ("subset", [A], [A, B], True),
    ("subset", [A, A], [A, B], False),
    ("superset", [B, A, A], [A, B], True),
    ("superset", [A, B], [A, A, B], False),
    ("strict", [], [], True),
    ("superset", [A], [], True),
    ("unordered", [A], [], False),
])
def test_order_modes(mode, calls, expected, passed):
    score = ToolCalls(mode=mode).score(case(calls, expected))
    assert score.value == (1.0 if passed else 0.0), score.details
    assert bool(score.details["failures"]) is not passed


def test_argument_rules_pair_repeated_calls_as_well_as_they_can():
    # with subset arguments either made call fits the first expected one: a first-come pairing
    # would give A2 to it and leave the second expected call unmatched
    score = ToolCalls(mode="unordered", arguments="subset").score(case([A2, A], [A, A2]))
    assert score.value == 1.0, score.details
    assert ToolCalls(mode="unordered").score(case([A2, A], [A, A2])).value == 1.0
    assert ToolCalls(mode="strict").score(case([A2], [A])).value == 0.0
    assert ToolCalls(mode="strict", arguments="subset").score(case([A2], [A])).value == 1.0
    assert ToolCalls(mode="strict", arguments="ignore").score(case([("a", {"x": 5})], [A])).value == 1.0


def test_json_equality_of_arguments():
    """Numbers by value, true apart from 1, objects in any key order."""
    assert ToolCalls().score(case([("a", {"x": 1.0, "o": {"p": 1, "q": 2}})], [("a", {"o": {"q": 2, "p": 1}, "x": 1})])).value == 1.0
    assert ToolCalls().score(case([("a", {"x": True})], [("a", {"x": 1})])).value == 0.0
    assert ToolCalls().score(case([("a", {"x": "1"})], [("a", {"x": 1})])).value == 0.0


def test_forbidden_tools_steps_and_turns():
    made = case([A, B, A], [A, B, A], turns=3)
    assert ToolCalls(forbidden=["c"], max_steps=3, max_turns=4).score(made).value == 1.0
    score = ToolCalls(forbidden=["b"], max_steps=2, max_turns=3).score(made)
    assert score.details["failures"] == ["call 2 uses the forbidden tool 'b'", "3 tool calls, more than max_steps=2",
                                         "4 assistant turns, more than max_turns=3"]
    assert score.value == 0.0 and score.label == "fail" and score.details["steps"] == 3


def test_schema_check_against_the_cases_tools():
    good = case([("book", {"flight": "BA1", "seats": 2})], tools=[FLIGHTS])
    assert ToolCalls(mode="ignore", schema=True).score(good).value == 1.0
    bad = case([("book", {"flight": "BA1", "seats": 0, "meal": "veg"}), ("cancel", {})], tools=[FLIGHTS])
    failures = ToolCalls(mode="ignore", schema=True).score(bad).details["failures"]
    assert failures == ["call 1 (book): (arguments): Additional properties are not allowed ('meal' was unexpected)",
                        "call 1 (book): seats: 0 is less than the minimum of 1",
                        "call 2: no tool named 'cancel' in the case's tools"]
    broken = dict(FLIGHTS, function=dict(FLIGHTS["function"], parameters={"type": "nonsense"}))
    with pytest.raises(ValueError, match="not a valid JSON Schema"):  # the scorer's error, not a 0
        ToolCalls(mode="ignore", schema=True).score(case([("book", {})], tools=[broken]))
