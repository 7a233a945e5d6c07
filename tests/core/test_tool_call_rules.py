"""Tool calls at the door (issue 50, defect 2): a tool call id is a call's own (a duplicate, in one
message or across messages, is refused: its tool result would answer two calls), and a call's
arguments follow one rule on both sides: a JSON object, ``{}`` for a call without arguments; a
missing or null ``arguments`` is refused for an expected call as for a made one, never read as
"no arguments". Through ``evalyard run``: one line naming file, line and field, exit 2, nothing
stored."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from testutil import error_lines

from evalyard.cli import cli


def call(call_id: str, arguments: str = "{}") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": "get_time", "arguments": arguments}}


def record(messages=None, expected=None) -> dict:
    out = {"id": "a", "candidate": "x", "messages": messages or [{"role": "user", "content": "time?"}]}
    if expected is not None:
        out["expected_tool_calls"] = expected
    return out


USER = {"role": "user", "content": "time?"}
REFUSED = {
    "duplicate id in one message": (
        record([USER, {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c1")]}]),
        "messages[1].tool_calls[1].id", "duplicate tool call id 'c1'"),
    "duplicate id across messages": (
        record([USER, {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
                {"role": "tool", "tool_call_id": "c1", "content": "noon"},
                {"role": "assistant", "content": None, "tool_calls": [call("c1")]}]),
        "messages[3].tool_calls[0].id", "duplicate tool call id 'c1'"),
    "made call with null arguments": (
        record([USER, {"role": "assistant", "content": None, "tool_calls": [call("c1", "null")]}]),
        "messages[1].tool_calls[0].function.arguments", 'expected the arguments to be a JSON object ("{}" for a '
                                                        "call without arguments), got null"),
    "expected call with null arguments": (
        record(expected=[{"name": "get_time", "arguments": None}]),
        "expected_tool_calls[0].arguments", "expected the call's arguments (an object; {} for a call without "
                                            "arguments)"),
    "expected call without arguments": (
        record(expected=[{"name": "get_time"}]),
        "expected_tool_calls[0].arguments", "expected the call's arguments (an object; {} for a call without "
                                            "arguments)"),
}


@pytest.mark.parametrize("what", sorted(REFUSED))
def test_refused(app, tmp_path, what):
    bad, field, message = REFUSED[what]
    path = tmp_path / "chats.jsonl"
    path.write_text(json.dumps({"id": "first", "candidate": "x"}) + "\n" + json.dumps(bad) + "\n")
    db = tmp_path / "runs.db"
    result = CliRunner().invoke(cli, ["run", str(path), "-s", "json_valid", "--db", f"sqlite:///{db}"], obj=app)
    assert result.exit_code == 2, result.output
    (line,) = error_lines(result.output)
    assert line.startswith(f"Error: {path}:2: field {field!r}: {message}"), result.output
    assert not db.exists()


def test_no_arguments_is_written_as_an_empty_object_on_both_sides(app, tmp_path):
    path = tmp_path / "chats.jsonl"
    path.write_text(json.dumps(record([USER, {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
                                       {"role": "tool", "tool_call_id": "c1", "content": "noon"},
                                       {"role": "assistant", "content": None, "tool_calls": [call("c2")]}],
                                      expected=[{"name": "get_time", "arguments": {}}] * 2)) + "\n")
    db = tmp_path / "runs.db"
    result = CliRunner().invoke(cli, ["run", str(path), "-s", "json_valid", "--db", f"sqlite:///{db}", "--json"],
                                obj=app)
    assert result.exit_code in (0, 1), result.output  # read and scored (json_valid fails "x": exit 0 or 1)
    assert json.loads(result.output)["status"] == "completed"
