"""Cases that hold a dialogue (``messages``, ``tools``, ``expected_tool_calls``): read from JSONL,
YAML and CSV records and OpenAI chat records as they are, checked on reading (one line naming
file, line and field), part of the suite's version, and stored so that every reader of the
store gives them back."""

from __future__ import annotations

import json

import pytest

from testutil import write
from evalyard import Case, InputError, Suite
from evalyard.cases import iter_csv, iter_jsonl
from evalyard.store import Store

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def call(call_id, name, arguments):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def conversation(arguments='{"city": "Paris"}', answered="c1"):
    return [{"role": "system", "content": "Use the tools."},
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [call("c1", "get_weather", arguments)]},
            {"role": "tool", "tool_call_id": answered, "content": "18 C"},
            {"role": "user", "content": [{"type": "text", "text": "And in"}, {"type": "text", "text": "Rome?"}]},
            {"role": "assistant", "content": "18 C in Paris; I will look up Rome."}]


def chat_record(**changes):
    record = {"messages": conversation(), "tools": [WEATHER]}
    record.update(changes)
    return record


def write_jsonl(path, *records):
    return write(path, "".join(json.dumps(r) + "\n" for r in records))


def test_an_openai_chat_record_is_a_case_as_it_is(tmp_path):
    path = write_jsonl(tmp_path / "chats.jsonl", chat_record(), chat_record(id="named", input="my own input"))
    (first, origin), (second, _) = list(iter_jsonl(path))
    assert origin == f"{path}:1" and first.id == "1"
    assert first.input == "And in\nRome?"  # the last user message's text parts
    assert first.messages == conversation() and first.tools == [WEATHER] and first.expected_tool_calls is None
    assert first.metadata == {} and first.has("messages") and first.has("tools")
    assert not first.has("expected_tool_calls")
    assert second.id == "named" and second.input == "my own input"


def test_the_field_map_names_other_columns(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", {"id": "a", "conversation": conversation(),
                                             "gold": [{"name": "get_weather", "arguments": {"city": "Paris"}}]})
    ((case, _),) = list(iter_jsonl(path, {"messages": "conversation", "expected_tool_calls": "gold"}))
    assert case.messages == conversation() and case.expected_tool_calls[0]["name"] == "get_weather"
    assert "conversation" not in case.metadata and "gold" not in case.metadata


def test_csv_cells_hold_the_dialogue_as_json(tmp_path):
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["id", "messages", "expected_tool_calls", "tools"])
    writer.writerow(["a", json.dumps(conversation()), "[]", ""])
    ((case, _),) = list(iter_csv(write(tmp_path / "c.csv", out.getvalue())))
    assert case.messages == conversation() and case.expected_tool_calls == [] and case.tools is None
    assert case.has("expected_tool_calls")  # an empty reference: no call expected


BAD = [
    ("arguments not JSON", chat_record(messages=conversation(arguments='{"city": Paris}')),
     "messages[2].tool_calls[0].function.arguments", "arguments are not JSON"),
    ("arguments not an object", chat_record(messages=conversation(arguments='["Paris"]')),
     "messages[2].tool_calls[0].function.arguments", "JSON object"),
    ("arguments as an object", chat_record(messages=conversation(arguments={"city": "Paris"})),
     "messages[2].tool_calls[0].function.arguments", "JSON string"),
    ("result without a call", chat_record(messages=conversation(answered="c9")),
     "messages[3].tool_call_id", "no earlier tool call"),
    ("unknown role", chat_record(messages=[{"role": "robot", "content": "hi"}]), "messages[0].role", "unknown role"),
    ("messages not a list", chat_record(messages={"role": "user"}), "messages", "expected a list"),
    ("tool without a name", chat_record(tools=[{"type": "function", "function": {}}]), "tools[0].function.name",
     "tool name"),
    ("expected call with a stray key", chat_record(expected_tool_calls=[{"name": "x", "args": {}}]),
     "expected_tool_calls[0]", "unknown key 'args'"),
    ("expected arguments not an object", chat_record(expected_tool_calls=[{"name": "x", "arguments": "{}"}]),
     "expected_tool_calls[0].arguments", "expected an object"),
]


@pytest.mark.parametrize("record,field,message", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_a_bad_dialogue_names_file_line_and_field(tmp_path, record, field, message):
    path = write_jsonl(tmp_path / "bad.jsonl", chat_record(), record)
    with pytest.raises(InputError) as caught:
        list(iter_jsonl(path))
    error = caught.value
    assert (error.path, error.line, error.field) == (str(path), 2, field)
    assert message in str(error) and "\n" not in str(error)


def test_an_inline_yaml_case_names_the_line_of_the_bad_message(tmp_path, app):
    suite = write(tmp_path / "suite.yaml", """\
name: chats
cases:
  - id: a
    messages:
      - role: user
        content: hello
      - role: robot
        content: beep
""")
    with pytest.raises(InputError) as caught:
        app.load_suite(str(suite))
    assert (caught.value.line, caught.value.field) == (7, "messages[1].role")


def test_a_changed_conversation_is_a_new_suite_version():
    def version(**fields):
        return Suite(name="s", cases=[Case(id="a", input="q", **fields)]).version

    plain = version()
    # a case without a dialogue hashes as before dialogues existed: stored suites keep their version
    import hashlib

    before = {"id": "a", "input": "q", "reference": None, "context": [], "metadata": {}}
    digest = hashlib.sha256(json.dumps(before, sort_keys=True, ensure_ascii=False).encode() + b"\n")
    assert plain == digest.hexdigest()[:16]
    with_chat = version(messages=conversation())
    assert with_chat != plain
    assert version(messages=conversation('{"city": "Rome"}')) != with_chat
    assert version(messages=conversation(), tools=[WEATHER]) != with_chat
    assert version(messages=conversation(), expected_tool_calls=[]) != with_chat


def test_the_dialogue_round_trips_through_every_reader_of_the_store(db_url):
    from evalyard.store.labels import run_cases
    from evalyard.store.reading import cases_by_id

    expected = [{"name": "get_weather", "arguments": {"city": "Paris", "nested": {"unit": ["C", 1.5, None, True]}}}]
    cases = [Case(id="chat", input="Weather?", candidate="18 C", messages=conversation(), tools=[WEATHER],
                  expected_tool_calls=expected),
             Case(id="empty-reference", messages=conversation(), expected_tool_calls=[]),
             Case(id="plain", input="q", candidate="a", reference="r", context=["p"], metadata={"k": 1})]
    suite = Suite(name="chats", cases=cases)
    store = Store(db_url)
    suite_id = store.ensure_suite(suite)
    run_id = store.create_run(suite_id, cases, name="r", scorers=[], versions={}, source="t")
    run = store.get_run(run_id)
    assert [c.to_dict() for c in store.run_cases(run)] == [c.to_dict() for c in cases]
    windows = list(store.iter_run_cases(run_id, suite_id, window=2))
    assert [len(w) for w in windows] == [2, 1]
    assert windows[0][1].expected_tool_calls == [] and windows[1][0].messages is None
    by_id = run_cases(store, run, ["plain", "chat"])
    assert by_id["chat"].to_dict() == cases[0].to_dict() and by_id["plain"].messages is None
    found = cases_by_id(store, run, ["chat", "plain"])
    assert found["chat"]["dialogue"] == {"messages": conversation(), "tools": [WEATHER],
                                         "expected_tool_calls": expected}
    assert found["plain"]["dialogue"] == {}
    store.close()


def test_a_case_without_a_dialogue_stores_null(tmp_path):
    """Single-answer suites pay nothing: their cases' dialogue column is SQL NULL, not JSON null."""
    from sqlalchemy import text

    store = Store(f"sqlite:///{tmp_path / 'x.db'}")
    suite = Suite(name="s", cases=[Case(id="a", input="q")])
    store.ensure_suite(suite)
    with store.engine.connect() as connection:
        assert connection.execute(text("SELECT dialogue IS NULL FROM cases")).scalar_one() == 1
    store.close()
