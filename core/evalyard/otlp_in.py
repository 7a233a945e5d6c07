"""OpenTelemetry GenAI traces read as cases (``--format otel`` / ``otel-trace``, ``evalyard collect``).

Input is OTLP export requests: OTLP/JSON lines (``{"resourceSpans": ...}`` or
``{"resourceLogs": ...}`` per line, what the Collector's file exporter and ``evalyard collect``
write), or protobuf (``.pb`` / ``.binpb``: ``ExportTraceServiceRequest`` messages, each preceded
by its length as 4 big-endian bytes, the Collector file exporter's ``proto`` format).

Both shapes of the GenAI semantic conventions are read:

- message content as span attributes: ``gen_ai.input.messages``, ``gen_ai.output.messages``,
  ``gen_ai.system_instructions`` (JSON, parts-based), also when carried by a
  ``gen_ai.client.inference.operation.details`` event;
- message content as events (log records, or span events): ``gen_ai.system.message``,
  ``gen_ai.user.message``, ``gen_ai.assistant.message``, ``gen_ai.tool.message``,
  ``gen_ai.choice``, joined to their span by trace and span id.

A model call is a span with ``gen_ai.operation.name`` (or any ``gen_ai.request.model``). With
``otel`` each model call is a case (its id ``<trace id>:<span id>``); with ``otel-trace`` each
trace is one (the last model call's conversation, the case id the trace id). The case keeps
``metadata.trace_id`` / ``metadata.span_id`` (hex), which ``--otel`` uses to send evaluations
back into the source trace, and the model and token usage in ``metadata``.

Spans and events of one trace may be anywhere in the file, so the records are spooled to a
temporary SQLite file, keyed by trace, and read back one trace at a time: memory depends on the
largest trace, never on the file.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import sqlite3
import struct
import tempfile
from pathlib import Path
from typing import Any, Iterable, Iterator

from .cases import case_from_record
from .errors import InputError
from .valid_text import unstorable

MESSAGE_EVENTS = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                  "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool",
                  "gen_ai.choice": "assistant"}
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
PROTOBUF_ENDINGS = (".pb", ".binpb")
_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


# -- OTLP values -------------------------------------------------------------------------------

def any_value(value: Any) -> Any:
    """An OTLP/JSON ``AnyValue`` as a Python value."""
    if not isinstance(value, dict) or not value:
        return None
    kind, inner = next(iter(value.items()))
    if kind == "kvlistValue":
        return {kv.get("key"): any_value(kv.get("value")) for kv in (inner or {}).get("values") or []}
    if kind == "arrayValue":
        return [any_value(v) for v in (inner or {}).get("values") or []]
    if kind == "intValue":
        return int(inner)
    if kind == "doubleValue":
        return float(inner)
    if kind == "bytesValue":
        return inner
    return inner


def attributes_of(items: Any) -> dict[str, Any]:
    return {kv.get("key"): any_value(kv.get("value")) for kv in items or [] if isinstance(kv, dict)}


def hex_ids(node: Any) -> Any:
    """Protobuf's JSON mapping writes bytes as base64; OTLP/JSON writes trace and span ids as hex.
    Rewrites the ids of a ``MessageToDict`` result in place, recursively."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_FIELDS and isinstance(value, str) and value:
                node[key] = base64.b64decode(value).hex()
            else:
                hex_ids(value)
    elif isinstance(node, list):
        for item in node:
            hex_ids(item)
    return node


def protobuf_to_json(body: bytes, signal: str) -> dict[str, Any]:
    """An OTLP protobuf request body (``traces`` or ``logs``) as its OTLP/JSON object."""
    from google.protobuf.json_format import MessageToDict

    if signal == "traces":
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest as Request
    else:
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest as Request
    request = hex_ids(MessageToDict(Request.FromString(body), use_integers_for_enums=True))
    request.setdefault("resourceSpans" if signal == "traces" else "resourceLogs", [])  # empty, but a request
    return request


# -- records --------------------------------------------------------------------------------------

def is_genai_span(span: dict[str, Any]) -> bool:
    return any(str(kv.get("key", "")).startswith("gen_ai.") for kv in span.get("attributes") or []
               if isinstance(kv, dict))


def is_genai_log(record: dict[str, Any]) -> bool:
    return str(record.get("eventName") or attributes_of(record.get("attributes")).get("event.name")
               or "").startswith("gen_ai.")


def genai_only(request: dict[str, Any]) -> dict[str, Any] | None:
    """The request with only its GenAI spans and log records (None when none is left): what the
    receiver keeps of an application's telemetry."""
    kept = False
    for resource in request.get("resourceSpans") or []:
        for scope in resource.get("scopeSpans") or []:
            scope["spans"] = [s for s in scope.get("spans") or [] if isinstance(s, dict) and is_genai_span(s)]
            kept = kept or bool(scope["spans"])
    for resource in request.get("resourceLogs") or []:
        for scope in resource.get("scopeLogs") or []:
            scope["logRecords"] = [r for r in scope.get("logRecords") or [] if isinstance(r, dict) and is_genai_log(r)]
            kept = kept or bool(scope["logRecords"])
    return request if kept else None


class _Source:
    """Where a record came from, for the error naming file, line (or record) and field."""

    def __init__(self, path: str, line: int, label: str = "line") -> None:
        self.path, self.line, self.label = path, line, label

    def error(self, message: str, field: str | None = None) -> InputError:
        return InputError(message, path=self.path, line=self.line, field=field)


def _list(node: dict[str, Any], key: str, where: _Source, at: str) -> list[Any]:
    if not isinstance(node, dict):  # a resource, scope or span that is not an object
        raise where.error(f"expected an object, got {type(node).__name__}", at.rstrip(".") or None)
    value = node.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise where.error(f"expected a list, got {type(value).__name__}", f"{at}{key}")
    return value


def _hex_id(value: Any, size: int, where: _Source, field: str) -> str:
    if not isinstance(value, str) or len(value) != size * 2:
        raise where.error(f"expected a {size}-byte id as {size * 2} hex digits, got {value!r:.40}", field)
    try:
        bytes.fromhex(value)
    except ValueError:
        raise where.error(f"expected hex digits, got {value!r:.40}", field) from None
    return value.lower()


def records_of(request: Any, where: _Source) -> Iterator[tuple[str, str, str, dict[str, Any]]]:
    """(kind, trace id, span id, record) for each span (``span``), span event and log record
    (``event``) of one OTLP/JSON request, each checked for what the cases need."""
    if not isinstance(request, dict):
        raise where.error(f"expected an OTLP export request (an object), got {type(request).__name__}")
    if "resourceSpans" not in request and "resourceLogs" not in request:
        raise where.error("expected an OTLP export request with resourceSpans or resourceLogs", "resourceSpans")
    found = unstorable(request)  # an attribute, a body, a name: refused here, whatever reads it later
    if found is not None:
        raise where.error(found[1], found[0])
    for r, resource in enumerate(_list(request, "resourceSpans", where, "")):
        for s, scope in enumerate(_list(resource, "scopeSpans", where, f"resourceSpans[{r}].")):
            for n, span in enumerate(_list(scope, "spans", where, f"resourceSpans[{r}].scopeSpans[{s}].")):
                at = f"resourceSpans[{r}].scopeSpans[{s}].spans[{n}]"
                if not isinstance(span, dict):
                    raise where.error(f"expected a span (an object), got {type(span).__name__}", at)
                trace_id = _hex_id(span.get("traceId"), 16, where, f"{at}.traceId")
                span_id = _hex_id(span.get("spanId"), 8, where, f"{at}.spanId")
                attributes = _attributes(span, where, at)
                yield "span", trace_id, span_id, {"name": span.get("name"), "attributes": attributes,
                                                  "start": int(span.get("startTimeUnixNano") or 0), "at": at}
                for e, event in enumerate(_list(span, "events", where, f"{at}.")):
                    name = event.get("name") if isinstance(event, dict) else None
                    if name in MESSAGE_EVENTS or name == DETAILS_EVENT:
                        yield "event", trace_id, span_id, {
                            "name": name, "attributes": _attributes(event, where, f"{at}.events[{e}]"),
                            "body": None, "time": int(event.get("timeUnixNano") or 0), "at": f"{at}.events[{e}]"}
    for r, resource in enumerate(_list(request, "resourceLogs", where, "")):
        for s, scope in enumerate(_list(resource, "scopeLogs", where, f"resourceLogs[{r}].")):
            for n, record in enumerate(_list(scope, "logRecords", where, f"resourceLogs[{r}].scopeLogs[{s}].")):
                at = f"resourceLogs[{r}].scopeLogs[{s}].logRecords[{n}]"
                if not isinstance(record, dict):
                    raise where.error(f"expected a log record (an object), got {type(record).__name__}", at)
                attributes = _attributes(record, where, at)
                name = record.get("eventName") or attributes.get("event.name")
                if name not in MESSAGE_EVENTS and name != DETAILS_EVENT:
                    continue
                if not record.get("traceId") or not record.get("spanId"):
                    raise where.error(f"a {name} event with no trace and span id cannot be joined to its model "
                                      "call", f"{at}.spanId")
                yield "event", _hex_id(record["traceId"], 16, where, f"{at}.traceId"), \
                    _hex_id(record["spanId"], 8, where, f"{at}.spanId"), {
                        "name": name, "attributes": attributes, "body": any_value(record.get("body")),
                        "time": int(record.get("timeUnixNano") or record.get("observedTimeUnixNano") or 0),
                        "at": at}


def _attributes(node: dict[str, Any], where: _Source, at: str) -> dict[str, Any]:
    items = _list(node, "attributes", where, f"{at}.")
    if not all(isinstance(kv, dict) and isinstance(kv.get("key"), str) for kv in items):
        raise where.error("expected attributes as {key, value} objects", f"{at}.attributes")
    return attributes_of(items)


# -- reading files ----------------------------------------------------------------------------------

def requests_in(path: str) -> Iterator[tuple[Any, _Source]]:
    """Each export request in the file, as OTLP/JSON, with where it is."""
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None
    with handle:
        if path.lower().endswith(PROTOBUF_ENDINGS):
            yield from _protobuf_requests(handle, path)
            return
        for line_no, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            where = _Source(path, line_no)
            try:
                yield json.loads(raw.decode("utf-8-sig" if line_no == 1 else "utf-8")), where
            except UnicodeDecodeError:
                raise where.error("not UTF-8 text") from None
            except json.JSONDecodeError as exc:
                raise where.error(f"malformed JSON: {exc.msg} (column {exc.colno})") from None
            except RecursionError:
                raise where.error("JSON nested too deeply") from None


def _protobuf_requests(handle, path: str) -> Iterator[tuple[Any, _Source]]:
    from google.protobuf.message import DecodeError

    number = 0
    while True:
        head = handle.read(4)
        if not head:
            return
        number += 1
        where = _Source(path, number, "record")
        (size,) = struct.unpack(">I", head.ljust(4, b"\0"))
        body = handle.read(size)
        if len(head) < 4 or len(body) < size:
            raise where.error(f"record {number} is cut short (expected {size} bytes after its 4-byte length)")
        try:
            yield protobuf_to_json(body, "traces"), where
        except DecodeError as exc:
            raise where.error(f"record {number} is not an OTLP ExportTraceServiceRequest: {exc}") from None


class Spool:
    """The file's spans and message events in a temporary SQLite file, read back by trace."""

    def __init__(self) -> None:
        handle, self.path = tempfile.mkstemp(prefix="evalyard-otel-", suffix=".sqlite")
        os.close(handle)
        self.db = sqlite3.connect(self.path)
        self.db.execute("PRAGMA journal_mode=OFF")
        self.db.execute("PRAGMA synchronous=OFF")
        self.db.execute("CREATE TABLE records (seq INTEGER PRIMARY KEY, trace TEXT, span TEXT, kind TEXT, "
                        "origin TEXT, data TEXT)")

    def add(self, rows: Iterable[tuple[str, str, str, str, str]]) -> None:
        self.db.executemany("INSERT INTO records (kind, trace, span, origin, data) VALUES (?, ?, ?, ?, ?)", rows)

    def traces(self) -> Iterator[tuple[str, list[tuple[str, str, str, dict[str, Any]]]]]:
        """Each trace id and its records (kind, span id, origin, record), in the order first seen."""
        self.db.execute("CREATE INDEX by_trace ON records (trace, seq)")
        self.db.commit()  # the reader is a second connection
        order = self.db.execute("SELECT trace FROM records GROUP BY trace ORDER BY MIN(seq)")
        reader = sqlite3.connect(self.path)
        try:
            while batch := order.fetchmany(500):
                for (trace,) in batch:
                    yield trace, [(kind, span, origin, json.loads(data)) for kind, span, origin, data in reader.execute(
                        "SELECT kind, span, origin, data FROM records WHERE trace = ? ORDER BY seq", (trace,))]
        finally:
            reader.close()

    def close(self) -> None:
        self.db.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)


def iter_otel(path: str | Path, field_map: dict[str, str] | None = None, *, per: str = "call"
              ) -> Iterator[tuple[Any, str]]:
    """(case, origin) for each model call (``per="call"``) or trace (``per="trace"``) of an OTLP file."""
    path = str(path)
    spool = Spool()
    try:
        for request, where in requests_in(path):
            origin = f"{path}:{where.line}"
            rows = [(kind, trace, span, origin, json.dumps(record))
                    for kind, trace, span, record in records_of(request, where)]
            spool.add(rows)
        index = 0
        for trace_id, records in spool.traces():
            for record, origin in cases_of_trace(trace_id, records, per=per):
                yield case_from_record(record, path=origin.rpartition(":")[0], line=int(origin.rpartition(":")[2]),
                                       index=index, field_map=field_map or {}), origin
                index += 1
    finally:
        spool.close()


def iter_otel_calls(path: str | Path, field_map: dict[str, str] | None = None) -> Iterator[tuple[Any, str]]:
    return iter_otel(path, field_map, per="call")


def iter_otel_traces(path: str | Path, field_map: dict[str, str] | None = None) -> Iterator[tuple[Any, str]]:
    return iter_otel(path, field_map, per="trace")


# -- a trace's model calls as case records ------------------------------------------------------------

def cases_of_trace(trace_id: str, records: list[tuple[str, str, str, dict[str, Any]]], *, per: str
                   ) -> Iterator[tuple[dict[str, Any], str]]:
    """The case records of one trace's model calls (spans with ``gen_ai.operation.name`` or
    ``gen_ai.request.model``), in the order they started; ``per="trace"``: the last one's, for
    the whole trace."""
    spans: dict[str, tuple[str, dict[str, Any]]] = {}
    events: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    seen: set[str] = set()
    for kind, span_id, origin, record in records:
        if kind == "span":
            spans[span_id] = (origin, record)  # a span sent twice (an exporter's retry) is one call
            continue
        key = json.dumps([span_id, {k: v for k, v in record.items() if k != "at"}], sort_keys=True)
        if key not in seen:  # and an event sent twice is one message
            seen.add(key)
            events.setdefault(span_id, []).append((origin, record))
    calls = sorted(((record["start"], span_id, origin, record) for span_id, (origin, record) in spans.items()
                    if _is_model_call(record["attributes"])), key=lambda item: (item[0], item[1]))
    if not calls:
        return
    built = [(span_id, origin, record) for _, span_id, origin, record in calls]
    if per == "trace":
        span_id, origin, record = built[-1]
        case = _case(trace_id, span_id, record, events.get(span_id, []), origin)
        case["id"] = trace_id
        case["metadata"]["model_calls"] = len(built)
        case["metadata"]["usage"] = _total_usage(rec for _, _, rec in built)
        yield case, origin
        return
    for span_id, origin, record in built:
        yield _case(trace_id, span_id, record, events.get(span_id, []), origin), origin


def _is_model_call(attributes: dict[str, Any]) -> bool:
    return "gen_ai.operation.name" in attributes or "gen_ai.request.model" in attributes


def _total_usage(records: Iterable[dict[str, Any]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for record in records:
        for key, value in _usage(record["attributes"]).items():
            total[key] = total.get(key, 0) + value
    return total


def _usage(attributes: dict[str, Any]) -> dict[str, int]:
    usage = {}
    for key, name in (("gen_ai.usage.input_tokens", "input_tokens"), ("gen_ai.usage.output_tokens", "output_tokens")):
        if isinstance(attributes.get(key), int):
            usage[name] = attributes[key]
    return usage


def _case(trace_id: str, span_id: str, span: dict[str, Any], events: list[tuple[str, dict[str, Any]]],
          origin: str) -> dict[str, Any]:
    attributes = span["attributes"]
    where = _Source(*_split(origin))
    details = next((e for _, e in events if e["name"] == DETAILS_EVENT), None)
    source = dict(details["attributes"]) if details else {}
    source.update({k: v for k, v in attributes.items() if k.startswith("gen_ai.") and k.endswith("messages")
                   or k == "gen_ai.system_instructions"})
    if "gen_ai.input.messages" in source or "gen_ai.output.messages" in source:
        messages, output = _from_attributes(source, where, span["at"])
    else:
        messages, output = _from_events(sorted(events, key=lambda item: item[1]["time"]), where)
    metadata: dict[str, Any] = {"trace_id": trace_id, "span_id": span_id}
    for key, name in (("gen_ai.request.model", "model"), ("gen_ai.response.model", "response_model"),
                      ("gen_ai.operation.name", "operation"),
                      ("gen_ai.provider.name", "provider"), ("gen_ai.system", "provider"),
                      ("gen_ai.response.id", "response_id")):
        if attributes.get(key) is not None:
            metadata.setdefault(name, attributes[key])
    if attributes.get("gen_ai.response.finish_reasons") is not None:
        metadata["finish_reasons"] = attributes["gen_ai.response.finish_reasons"]
    usage = _usage(attributes)
    if usage:
        metadata["usage"] = usage
    record: dict[str, Any] = {"id": f"{trace_id}:{span_id}", "metadata": metadata}
    if messages or output:
        record["messages"] = messages + ([output] if output else [])
    if output is not None:  # a reply of tool calls only is an empty answer, its calls in messages
        record["candidate"] = _text(output.get("content")) or ""
    return record


def _split(origin: str) -> tuple[str, int]:
    path, _, line = origin.rpartition(":")
    return path, int(line)


def _text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return json.dumps(content)


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value if value is not None else {})


def _json_attribute(source: dict[str, Any], key: str, where: _Source, at: str) -> list[Any]:
    value = source.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise where.error(f"{key} is not JSON: {exc.msg}", f"{at}.attributes.{key}") from None
    if not isinstance(value, list):
        raise where.error(f"expected a list of messages, got {type(value).__name__}", f"{at}.attributes.{key}")
    return value


def _from_attributes(source: dict[str, Any], where: _Source, at: str
                     ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The parts-based shape (``gen_ai.input.messages``...) in the OpenAI chat format."""
    messages: list[dict[str, Any]] = []
    instructions = _json_attribute(source, "gen_ai.system_instructions", where, at)
    if instructions:
        messages.append({"role": "system", "content": "\n".join(
            str(p.get("content", "")) for p in instructions if isinstance(p, dict) and p.get("type") == "text")})
    for n, message in enumerate(_json_attribute(source, "gen_ai.input.messages", where, at)):
        messages.extend(_from_parts(message, where, f"{at}.attributes.gen_ai.input.messages[{n}]"))
    outputs = _json_attribute(source, "gen_ai.output.messages", where, at)
    output = None
    for n, message in enumerate(outputs[:1]):
        converted = _from_parts(message, where, f"{at}.attributes.gen_ai.output.messages[{n}]")
        output = converted[0] if converted else None
    return messages, output


def _from_parts(message: Any, where: _Source, at: str) -> list[dict[str, Any]]:
    if not isinstance(message, dict) or not isinstance(message.get("parts", []), list):
        raise where.error("expected a message with a role and a list of parts", at)
    role = message.get("role")
    texts, calls, results = [], [], []
    for part in message.get("parts") or []:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            texts.append(str(part.get("content", "")))
        elif kind == "tool_call":
            calls.append({"id": part.get("id"), "type": "function",
                          "function": {"name": part.get("name"), "arguments": _arguments(part.get("arguments"))}})
        elif kind == "tool_call_response":
            response = part.get("response")
            results.append({"role": "tool", "tool_call_id": part.get("id"),
                            "content": response if isinstance(response, str) else json.dumps(response)})
    if results:
        return results
    out: dict[str, Any] = {"role": role, "content": "\n".join(texts) if texts else None}
    if calls:
        out["tool_calls"] = calls
    return [out]


def _from_events(events: list[tuple[str, dict[str, Any]]], where: _Source
                 ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The event shape (``gen_ai.user.message``... and ``gen_ai.choice``) in the OpenAI chat format."""
    messages, output = [], None
    for origin, event in events:
        name, body = event["name"], event["body"]
        if name == DETAILS_EVENT:
            continue
        if body is None:  # a span event carries its content as attributes
            body = {k.rpartition(".")[2]: v for k, v in event["attributes"].items()}
        if not isinstance(body, dict):
            raise _Source(*_split(origin)).error(f"expected the {name} event's body to be a map",
                                                 f"{event['at']}.body")
        if name == "gen_ai.choice":
            message = body.get("message") if isinstance(body.get("message"), dict) else body
            if output is None or body.get("index", 0) == 0:
                output = _chat(message, "assistant", origin, event)
            continue
        messages.append(_chat(body, MESSAGE_EVENTS[name], origin, event))
    return messages, output


def _chat(body: dict[str, Any], role: str, origin: str, event: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": body.get("role") or role, "content": body.get("content")}
    if role == "tool":
        message["tool_call_id"] = body.get("id") or body.get("tool_call_id")
    calls = body.get("tool_calls")
    if calls:
        if not isinstance(calls, list):
            raise _Source(*_split(origin)).error("expected a list of tool calls", f"{event['at']}.body.tool_calls")
        message["tool_calls"] = [
            {"id": call.get("id"), "type": call.get("type") or "function",
             "function": {"name": (call.get("function") or {}).get("name"),
                          "arguments": _arguments((call.get("function") or {}).get("arguments"))}}
            for call in calls if isinstance(call, dict)]
    return message
