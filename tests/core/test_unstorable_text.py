"""Text that cannot be stored (a lone surrogate: JSON's ``"\\ud800"`` without its pair) in any
string of any input format is refused at the door: one line naming file, line and field, exit
code 2, nothing stored, no run left ``running``. A generated answer holding one is that
generation's recorded error, so the run's export works. (Issue 50, defect 1.)"""

from __future__ import annotations

import csv
import io
import json
import re
import sqlite3

import pytest
from click.testing import CliRunner

from evalyard import Case, hookimpl
from evalyard.cli import cli

BAD = "x\ud800y"  # written to files with json.dumps: the escape "\ud800" on disk

CALL = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}}
GOOD_CHAT = [{"role": "user", "content": "weather?"}, {"role": "assistant", "content": None, "tool_calls": [CALL]},
             {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]


def chat_with(**changes) -> list[dict]:
    messages = json.loads(json.dumps(GOOD_CHAT))
    for where, value in changes.items():
        if where == "content":
            messages[0]["content"] = value
        elif where == "raw_arguments":  # the arguments' JSON text itself holds the surrogate
            messages[1]["tool_calls"][0]["function"]["arguments"] = json.dumps({"city": value}, ensure_ascii=False)
        elif where == "escaped_arguments":  # the arguments' JSON text spells it as an escape
            messages[1]["tool_calls"][0]["function"]["arguments"] = json.dumps({"city": value})
        elif where == "tool_result":
            messages[2]["content"] = value
    return messages


BASE = {"id": "a", "input": "q", "candidate": "x", "reference": "x"}
RECORDS = {  # what is bad -> (record, the field the error must name)
    "candidate": ({**BASE, "candidate": BAD}, "candidate"),
    "input": ({**BASE, "input": BAD}, "input"),
    "id": ({**BASE, "id": BAD}, "id"),
    "reference": ({**BASE, "reference": BAD}, "reference"),
    "context": ({**BASE, "context": ["ok", BAD]}, "context[1]"),
    "metadata value": ({**BASE, "metadata": {"k": {"deep": [BAD]}}}, "metadata.k.deep[0]"),
    "metadata key": ({**BASE, "metadata": {BAD: 1}}, "metadata.x\\ud800y"),
    "extra column": ({**BASE, "note": BAD}, "note"),
    "message content": ({"id": "a", "messages": chat_with(content=BAD)}, "messages[0].content"),
    "tool result": ({"id": "a", "messages": chat_with(tool_result=BAD)}, "messages[2].content"),
    "tool call arguments": ({"id": "a", "messages": chat_with(raw_arguments=BAD)},
                            "messages[1].tool_calls[0].function.arguments"),
    "escaped tool call arguments": ({"id": "a", "messages": chat_with(escaped_arguments=BAD)},
                                    "messages[1].tool_calls[0].function.arguments.city"),
    "expected call arguments": ({"id": "a", "messages": GOOD_CHAT,
                                 "expected_tool_calls": [{"name": "get_weather", "arguments": {"city": BAD}}]},
                                "expected_tool_calls[0].arguments.city"),
}


def run_cli(app, *args):
    result = CliRunner().invoke(cli, list(args), obj=app, catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def assert_refused(result, path, line, field, db):
    assert result.exit_code == 2, result.output
    lines = [line_ for line_ in result.output.splitlines() if line_.strip()]
    assert len(lines) == 1, result.output
    expected = f"Error: {path}:{line}: field {field!r}: text that is not valid Unicode: a lone surrogate \\ud800"
    assert lines[0].startswith(expected), lines[0]
    assert "Traceback" not in result.output
    assert not db.exists() or runs_in(db) == []  # nothing stored


def runs_in(db) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT id, status FROM runs").fetchall()


@pytest.mark.parametrize("what", sorted(RECORDS))
@pytest.mark.parametrize("extension", [".jsonl", ".json", ".yaml"])
def test_a_lone_surrogate_anywhere_in_a_case_is_one_line_exit_2(app, tmp_path, what, extension):
    record, field = RECORDS[what]
    path = tmp_path / f"cases{extension}"
    good = {**BASE, "id": "first"}
    if extension == ".jsonl":
        path.write_text(json.dumps(good) + "\n" + json.dumps(record) + "\n")
        line = 2
    elif extension == ".json":
        path.write_text(json.dumps([good, record]))
        line = 1
    else:  # inline YAML cases, the record as a JSON flow mapping (YAML reads "\ud800" as JSON does)
        path.write_text("name: s\nscorers: [json_valid]\ncases:\n  - " + json.dumps(good) + "\n  - "
                        + json.dumps(record) + "\n")
        if what != "escaped tool call arguments":  # found once the arguments are decoded, in the case
            field = f"cases[1].{field}"  # the suite file's own path to it
        line = 5
    db = tmp_path / "runs.db"
    result = run_cli(app, "run", str(path), "-s", "json_valid", "--db", f"sqlite:///{db}")
    assert_refused(result, path, line, field, db)


@pytest.mark.parametrize("column,cell,field", [
    ("metadata", json.dumps({"k": BAD}), "metadata.k"),
    ("context", json.dumps(["ok", BAD]), "context[1]"),
    ("messages", json.dumps(chat_with(escaped_arguments=BAD)), "messages[1].tool_calls[0].function.arguments.city"),
])
def test_csv_json_cells(app, tmp_path, column, cell, field):
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["id", "candidate", "reference", column])
    writer.writerow(["a", "x", "x", "[]" if column != "metadata" else "{}"])
    writer.writerow(["b", "x", "x", cell])
    path = tmp_path / "cases.csv"
    path.write_text(out.getvalue())
    db = tmp_path / "runs.db"
    result = run_cli(app, "run", str(path), "-s", "json_valid", "--db", f"sqlite:///{db}")
    assert_refused(result, path, 3, field, db)


def test_yaml_suite_settings_and_data_file(app, tmp_path):
    suite = tmp_path / "suite.yaml"
    suite.write_text('name: "s\\ud800"\ncases:\n  - {id: a, candidate: x, reference: x}\nscorers: [json_valid]\n')
    db = tmp_path / "runs.db"
    assert_refused(run_cli(app, "run", str(suite), "--db", f"sqlite:///{db}"), suite, 1, "name", db)
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps(BASE) + "\n" + json.dumps({**BASE, "id": "b", "reference": BAD}) + "\n")
    suite.write_text("name: s\ndata: data.jsonl\nscorers: [json_valid]\n")
    assert_refused(run_cli(app, "run", str(suite), "--db", f"sqlite:///{db}"), data, 2, "reference", db)


def otlp_request(model: str, output: str = "Paris.") -> dict:
    def attribute(key, value):
        return {"key": key, "value": {"stringValue": value}}

    span = {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "name": "chat",
            "startTimeUnixNano": "1", "attributes": [
                attribute("gen_ai.operation.name", "chat"), attribute("gen_ai.request.model", model),
                attribute("gen_ai.input.messages", json.dumps([{"role": "user", "parts": [
                    {"type": "text", "content": "Capital of France?"}]}])),
                attribute("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [
                    {"type": "text", "content": output}]}]))]}
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


@pytest.mark.parametrize("fmt", ["otel", "otel-trace"])
def test_otlp_attribute(app, tmp_path, fmt):
    path = tmp_path / "traces.otlp.jsonl"
    path.write_text(json.dumps(otlp_request("gpt")) + "\n" + json.dumps(otlp_request(BAD)) + "\n")
    db = tmp_path / "runs.db"
    result = run_cli(app, "run", str(path), "--format", fmt, "-s", "json_valid", "--db", f"sqlite:///{db}")
    assert_refused(result, path, 2, "resourceSpans[0].scopeSpans[0].spans[0].attributes[1].value.stringValue", db)
    # inside an attribute's JSON text, spelt as an escape: found once the messages are read
    path.write_text(json.dumps(otlp_request("gpt", output=BAD)) + "\n")
    result = run_cli(app, "run", str(path), "--format", fmt, "-s", "json_valid", "--db", f"sqlite:///{db}")
    assert_refused(result, path, 1, "messages[1].content", db)


class SurrogateFormat:
    """A plugin's data format that builds its cases itself (no ``case_from_record``)."""

    @staticmethod
    @hookimpl
    def register_loaders(register):
        def load(path, field_map):
            return [Case(id="a", candidate="x", reference="x"), Case(id="b", candidate=BAD, reference="x")], \
                [f"{path}:1", f"{path}:7"]

        register("surrogates", load, extensions=(".sur",))


def test_a_plugins_format_is_checked_too(app, tmp_path):
    app.register_plugin(SurrogateFormat, name="surrogate_format")
    path = tmp_path / "cases.sur"
    path.write_text("anything")
    db = tmp_path / "runs.db"
    result = run_cli(app, "run", str(path), "-s", "json_valid", "--db", f"sqlite:///{db}")
    assert_refused(result, path, 7, "candidate", db)


def test_cases_built_in_python_fail_before_anything_is_stored(app, tmp_path):
    from evalyard import InputError

    with pytest.raises(InputError, match=r"case 'b': field 'metadata.k': text that is not valid Unicode"):
        app.evaluate([Case(id="a", candidate="x", reference="x"),
                      Case(id="b", candidate="x", reference="x", metadata={"k": BAD})], ["json_valid"],
                     db=f"sqlite:///{tmp_path / 'runs.db'}")
    assert not (tmp_path / "runs.db").exists() or runs_in(tmp_path / "runs.db") == []


RULES = """\
- contains: weather
  times: 1
  tool_calls:
    - name: get_weather
      arguments: {city: "Par\\ud800is"}
- content: It is sunny.
"""

SUITE = """\
name: generated
cases:
  - id: a
    messages:
      - {role: user, content: "What is the weather in Paris?"}
    expected_tool_calls:
      - {name: get_weather, arguments: {city: Paris}}
  - id: b
    messages:
      - {role: user, content: "Hello"}
    expected_tool_calls: []
generator:
  name: agent/conversation
  model: scripted/rules.yaml
  max_steps: 1
scorers:
  - agent/tool_calls
"""


def test_a_generated_tool_call_that_cannot_be_stored_is_that_generations_error(installed_plugins, tmp_path,
                                                                               monkeypatch):
    """On 98440b5 the run completed and ``runs export`` of it ended in a UnicodeEncodeError
    traceback (jsonl, csv, parquet and html alike): the scorer's details quoted the call."""
    pytest.importorskip("evalyard_agent")
    from evalyard import Application

    monkeypatch.chdir(tmp_path)
    (tmp_path / "rules.yaml").write_text(RULES)
    (tmp_path / "suite.yaml").write_text(SUITE)
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    app = Application()
    result = run_cli(app, "run", "suite.yaml", "--db", db, "--json")
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.output)["run_id"]
    with sqlite3.connect(tmp_path / "runs.db") as connection:
        candidates = dict(connection.execute("SELECT case_id, error FROM candidates").fetchall())
    assert re.match(r"the generated messages\[1\]\.tool_calls\[0\]\.function\.arguments: text that is not valid "
                    r"Unicode: a lone surrogate \\ud800", candidates["a"]), candidates
    assert candidates["b"] is None
    for fmt in ("jsonl", "csv", "html"):
        exported = run_cli(app, "runs", "export", run_id, "--format", fmt, "-o", str(tmp_path / f"out.{fmt}"),
                           "--db", db)
        assert exported.exit_code == 0, exported.output
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert {row["case_id"] for row in rows} == {"a", "b"}
