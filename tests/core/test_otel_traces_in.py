"""``--format otel`` / ``otel-trace``: OTLP exports of GenAI spans read as cases, both shapes of
the semantic conventions (messages as span attributes, messages as log events), OTLP/JSON and
protobuf; bad input refused in one line naming file, line and field, exit 2, nothing stored."""

from __future__ import annotations

import json
import struct

import pytest
from click.testing import CliRunner

from evalyard import Application
from evalyard.cli import cli
from evalyard.settings import Settings

TRACE = "5b8efff798038103d269b633813fc60c"
TRACE2 = "0af7651916cd43dd8448eb211c80319c"
SPAN1, SPAN2, ROOT = "eee19b7ec3c1b174", "eee19b7ec3c1b175", "00f067aa0ba902b7"


def value(v):
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [value(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": value(x)} for k, x in v.items()]}}
    return {"stringValue": v}


def attrs(**items):
    return [{"key": k.replace("__", "."), "value": value(v)} for k, v in items.items()]


def span(trace, span_id, start, name="chat gpt-4o-mini", parent=ROOT, **attributes):
    return {"traceId": trace, "spanId": span_id, "parentSpanId": parent, "name": name, "kind": 3,
            "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 5), "attributes": attrs(**attributes)}


def traces(*spans):
    return {"resourceSpans": [{"resource": {"attributes": attrs(service__name="app")},
                               "scopeSpans": [{"scope": {"name": "test"}, "spans": list(spans)}]}]}


def logs(*records):
    return {"resourceLogs": [{"resource": {}, "scopeLogs": [{"scope": {"name": "test"}, "logRecords": list(records)}]}]}


def event(trace, span_id, name, body, time):
    return {"timeUnixNano": str(time), "traceId": trace, "spanId": span_id, "eventName": name,
            "attributes": attrs(gen_ai__system="openai"), "body": value(body)}


CALL_ATTRS = {"gen_ai__operation__name": "chat", "gen_ai__request__model": "gpt-4o-mini",
              "gen_ai__usage__input_tokens": 12, "gen_ai__usage__output_tokens": 3}

ATTRIBUTE_SHAPE = [
    traces(span(TRACE, ROOT, 1, name="agent", parent="")),
    traces(span(TRACE, SPAN1, 10, **CALL_ATTRS, gen_ai__input__messages=json.dumps(
        [{"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}]),
        gen_ai__output__messages=json.dumps([{"role": "assistant", "parts": [
            {"type": "tool_call", "id": "c1", "name": "weather", "arguments": {"city": "Paris"}}],
            "finish_reason": "tool_call"}]))),
    traces(span(TRACE, SPAN2, 20, **CALL_ATTRS, gen_ai__system_instructions=json.dumps(
        [{"type": "text", "content": "Be brief."}]), gen_ai__input__messages=json.dumps([
            {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
            {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "weather",
                                             "arguments": {"city": "Paris"}}]},
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "sunny"}]}]),
        gen_ai__output__messages=json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": "Sunny."}], "finish_reason": "stop"}]))),
]

EVENT_SHAPE = [  # events first: the join must not depend on the order in the file
    logs(event(TRACE2, SPAN1, "gen_ai.user.message", {"content": "Say hi"}, 100),
         event(TRACE2, SPAN1, "gen_ai.choice", {"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant", "content": "Hi!"}}, 102),
         event(TRACE2, SPAN1, "gen_ai.system.message", {"content": "You greet."}, 99)),
    traces(span(TRACE2, SPAN1, 98, parent="", **CALL_ATTRS)),
]


def write_jsonl(path, requests):
    path.write_text("".join(json.dumps(r) + "\n" for r in requests))
    return path


@pytest.fixture
def app(tmp_path):
    return Application(Settings.from_env(db_url=f"sqlite:///{tmp_path / 'db.sqlite'}"))


def run(app, *args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj=app, catch_exceptions=False)


def read_cases(app, path, fmt):
    from evalyard.suite_files import load_data_file

    return load_data_file(path, app.registry, {}, fmt)[0]


def test_one_case_per_model_call_with_messages_as_attributes(app, tmp_path):
    path = write_jsonl(tmp_path / "t.otlp.jsonl", ATTRIBUTE_SHAPE)
    first, second = read_cases(app, path, None)  # the .otlp.jsonl ending is the otel format
    assert first.id == f"{TRACE}:{SPAN1}" and second.id == f"{TRACE}:{SPAN2}"
    assert first.metadata["trace_id"] == TRACE and first.metadata["span_id"] == SPAN1
    assert first.metadata["model"] == "gpt-4o-mini" and first.metadata["usage"] == {"input_tokens": 12,
                                                                                       "output_tokens": 3}
    assert first.messages[-1]["tool_calls"] == [{"id": "c1", "type": "function", "function": {
        "name": "weather", "arguments": '{"city": "Paris"}'}}]
    assert second.messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "assistant", "content": "Sunny."}]
    assert second.candidate == "Sunny." and second.input == "Weather in Paris?"


def test_one_case_per_trace(app, tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", ATTRIBUTE_SHAPE + EVENT_SHAPE)
    agent, greeting = read_cases(app, path, "otel-trace")
    assert agent.id == TRACE and agent.metadata["span_id"] == SPAN2 and agent.metadata["model_calls"] == 2
    assert agent.metadata["usage"] == {"input_tokens": 24, "output_tokens": 6} and agent.candidate == "Sunny."
    assert greeting.id == TRACE2


def test_messages_as_log_events_joined_by_trace_and_span(app, tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", EVENT_SHAPE * 2)  # sent twice (an exporter's retry): one case
    (case,) = read_cases(app, path, "otel")
    assert case.messages == [{"role": "system", "content": "You greet."}, {"role": "user", "content": "Say hi"},
                             {"role": "assistant", "content": "Hi!"}]
    assert case.candidate == "Hi!" and case.metadata["trace_id"] == TRACE2


def test_protobuf_file(app, tmp_path):
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    import base64

    def b64(request):  # protobuf's JSON mapping wants bytes as base64
        for rs in request["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    for key in ("traceId", "spanId", "parentSpanId"):
                        s[key] = base64.b64encode(bytes.fromhex(s[key])).decode()
        return request

    frames = b"".join(struct.pack(">I", len(m)) + m for m in (
        ParseDict(b64(json.loads(json.dumps(r))), ExportTraceServiceRequest()).SerializeToString()
        for r in ATTRIBUTE_SHAPE))
    path = tmp_path / "t.otlp.pb"
    path.write_bytes(frames)
    cases = read_cases(app, path, None)
    assert [c.id for c in cases] == [f"{TRACE}:{SPAN1}", f"{TRACE}:{SPAN2}"] and cases[1].candidate == "Sunny."


def test_a_scored_run_of_traces(app, tmp_path):
    path = write_jsonl(tmp_path / "t.otlp.jsonl", ATTRIBUTE_SHAPE + EVENT_SHAPE)
    result = run(app, "run", path, "-s", "json_valid", "--json")
    assert result.exit_code in (0, 1), result.output
    assert json.loads(result.stdout)["cases"] == 3


BAD = {
    "not JSON": (["{oops"], 1, None, "malformed JSON"),
    "a trace id that is not hex": ([traces(span("zz" * 16, SPAN1, 1, **CALL_ATTRS))], 1,
                                   "resourceSpans[0].scopeSpans[0].spans[0].traceId", "hex"),
    "a short span id": ([traces(span(TRACE, "abcd", 1, **CALL_ATTRS))], 1,
                        "resourceSpans[0].scopeSpans[0].spans[0].spanId", "8-byte id"),
    "no spans or logs": ([{"hello": 1}], 1, "resourceSpans", "OTLP export request"),
    "input messages that are not JSON": (
        [traces(span(TRACE, SPAN1, 1, **CALL_ATTRS, gen_ai__input__messages="[{"))], 1,
        "resourceSpans[0].scopeSpans[0].spans[0].attributes.gen_ai.input.messages", "not JSON"),
    "a tool call whose arguments are not JSON": (
        [traces(span(TRACE, SPAN1, 1, **CALL_ATTRS, gen_ai__output__messages=json.dumps(
            [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c", "name": "f", "arguments": "{x"}]}])))],
        1, "messages[0].tool_calls[0].function.arguments", "not JSON"),
    "an event with no span id": (
        [traces(span(TRACE, SPAN1, 1, **CALL_ATTRS)),
         {"resourceLogs": [{"scopeLogs": [{"logRecords": [{"eventName": "gen_ai.user.message", "traceId": TRACE,
                                                          "body": value({"content": "x"})}]}]}]}],
        2, "resourceLogs[0].scopeLogs[0].logRecords[0].spanId", "cannot be joined"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_is_one_line_exit_2_nothing_stored(app, tmp_path, name):
    lines, line, field, words = BAD[name]
    path = tmp_path / "bad.otlp.jsonl"
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    result = run(app, "run", path, "-s", "json_valid")
    assert result.exit_code == 2
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1, message
    assert message.startswith(f"error: {path}:{line}") or f"{path}:{line}" in message
    if field:
        assert f"field '{field}'" in message
    assert words in message
    runs = run(app, "runs", "list", "--json")
    assert json.loads(runs.stdout or "[]") == []


def test_a_protobuf_record_cut_short_is_named_by_its_number(app, tmp_path):
    path = tmp_path / "cut.otlp.pb"
    path.write_bytes(struct.pack(">I", 0) + struct.pack(">I", 500) + b"\x0a\x02")  # record 2: 2 of 500 bytes
    result = run(app, "run", path, "-s", "json_valid")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [f"Error: {path}:2: record 2 is cut short (expected 500 bytes "
                                                  "after its 4-byte length)"]
    assert json.loads(run(app, "runs", "list", "--json").stdout or "[]") == []
