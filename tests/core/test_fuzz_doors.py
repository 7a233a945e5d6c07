"""A fuzzer of our own for every door evalyard reads (issue 50, defect 5): mutated and random
inputs to every registered data format and to YAML suite files (through ``evalyard run FILE -s
exact_match --db ...``, in process), to ``--reducer`` values, and to the receiver ``evalyard
collect`` (random bodies, headers, Content-Lengths and encodings over real sockets).

It fails on any traceback: an exit code other than 0, 1 or 2, an exception escaping the CLI,
"Traceback" in any output, a run left ``running`` in the database, or a receiver that dies,
prints a traceback or does not stop cleanly. A failure prints the input that caused it.

Seeded (``EVALYARD_FUZZ_SEED``, default 50) and bounded in time (``EVALYARD_FUZZ_SECONDS``, default
60, shared by the four doors), so a run is repeatable for its budget; marked ``slow`` (the full tier).
"""

from __future__ import annotations

import base64
import csv
import gzip
import io
import json
import os
import random
import socket
import sqlite3
import time
import zlib

import pytest
from click.testing import CliRunner

from collect_server import Collect, span_request

pytestmark = pytest.mark.slow

SEED = int(os.environ.get("EVALYARD_FUZZ_SEED", "50"))
BUDGET_S = float(os.environ.get("EVALYARD_FUZZ_SECONDS", "60"))
#: the share of the budget each door gets
SHARES = {"formats": 0.45, "suites": 0.2, "reducers": 0.1, "receiver": 0.25}

#: strings that broke, or could break, a door: surrogates, control characters, huge and odd numbers
NASTY_TEXT = ["\ud800", "x\udfffy", "\udcff", "\x00", "\u2028", "\ufeff", "é", "𝔘", "", " ", "\n", "null", "-1",
              "1e309", "NaN", "Infinity", "{}", "[]", "\\", "\"", "'", ",", ":", "=", "k=", "%s", "{{x}}", "a" * 300]
NASTY_JSON = [None, True, False, 0, -1, 1.5, 10 ** 30, -(10 ** 30), 1e308, "", [], {}, [[]], {"": None},
              {"\ud800": 1}, ["\ud800"]]


def nasty_value(rng: random.Random, depth: int = 0):
    roll = rng.random()
    if roll < 0.35:
        return rng.choice(NASTY_TEXT)
    if roll < 0.6 or depth > 3:
        return rng.choice(NASTY_JSON)
    if roll < 0.8:
        return [nasty_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(NASTY_TEXT + ["id", "name", "arguments", "role"]): nasty_value(rng, depth + 1)
            for _ in range(rng.randint(0, 3))}


def mutate_structure(rng: random.Random, value, depth: int = 0):
    """``value`` with a few of its parts replaced, dropped, duplicated or retyped."""
    if isinstance(value, dict) and value:
        out = dict(value)
        for _ in range(rng.randint(1, 2)):
            key = rng.choice(list(out)) if out else None
            roll = rng.random()
            if key is None:
                break
            if roll < 0.4:
                out[key] = mutate_structure(rng, out[key], depth + 1) if depth < 6 else nasty_value(rng)
            elif roll < 0.6:
                out[key] = nasty_value(rng)
            elif roll < 0.75:
                del out[key]
            else:
                out[rng.choice(NASTY_TEXT + [key + "x"])] = nasty_value(rng)
        return out
    if isinstance(value, list) and value:
        out = list(value)
        n = rng.randrange(len(out))
        roll = rng.random()
        if roll < 0.5:
            out[n] = mutate_structure(rng, out[n], depth + 1) if depth < 6 else nasty_value(rng)
        elif roll < 0.7:
            out.append(out[n])  # a duplicate (ids, tool calls)
        elif roll < 0.85:
            del out[n]
        else:
            out.insert(n, nasty_value(rng))
        return out
    if isinstance(value, str) and value and rng.random() < 0.5:
        n = rng.randrange(len(value) + 1)
        return value[:n] + rng.choice(NASTY_TEXT) + value[n:]
    return nasty_value(rng)


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        n = rng.randrange(len(data) + 1)
        if roll < 0.3 and data:
            data[min(n, len(data) - 1)] = rng.randrange(256)
        elif roll < 0.55:
            data[n:n] = rng.choice([b"\\ud800", b"\xff", b"\xed\xa0\x80", b"\x00", b"{", b"}", b"[", b"\"", b",",
                                    b"\n", b"\r", b":", b"-1", b"null", b"\xef\xbb\xbf"])
        elif roll < 0.75 and data:
            del data[n:n + rng.randint(1, 20)]
        else:
            end = min(len(data), n + rng.randint(1, 40))
            data[n:n] = data[n:end]
    return bytes(data)


# -- seeds: one valid input per format -----------------------------------------------------------------

CALL = {"id": "c1", "type": "function", "function": {"name": "get_time", "arguments": "{\"tz\": \"UTC\"}"}}
CASE = {"id": "a", "input": "What time is it?", "candidate": "noon", "reference": "noon", "context": ["p1", "p2"],
        "metadata": {"k": {"b": 1, "a": [1, 2]}}, "extra": "x",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "time?"},
                     {"role": "assistant", "content": None, "tool_calls": [CALL]},
                     {"role": "tool", "tool_call_id": "c1", "content": "noon"},
                     {"role": "assistant", "content": "noon"}],
        "tools": [{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}],
        "expected_tool_calls": [{"name": "get_time", "arguments": {"tz": "UTC"}}]}


def otlp_seed() -> dict:
    request = span_request(2)
    attributes = request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
    attributes.append({"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(
        [{"role": "user", "parts": [{"type": "text", "content": "hi"},
                                    {"type": "tool_call", "id": "t1", "name": "f", "arguments": {"a": 1}}]}])}})
    attributes.append({"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(
        [{"role": "assistant", "parts": [{"type": "text", "content": "hello"}]}])}})
    attributes.append({"key": "gen_ai.usage.input_tokens", "value": {"intValue": "3"}})
    return request


def otlp_logs_seed() -> dict:
    body = {"kvlistValue": {"values": [{"key": "content", "value": {"stringValue": "hi"}}]}}
    return {"resourceLogs": [{"scopeLogs": [{"logRecords": [{
        "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "0000000000000001", "timeUnixNano": "1",
        "eventName": "gen_ai.user.message", "body": body}]}]}]}


def csv_text(records: list) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    columns = sorted({k for r in records if isinstance(r, dict) for k in r}) or ["candidate"]
    writer.writerow(columns)
    for r in records:
        r = r if isinstance(r, dict) else {}
        writer.writerow(["" if r.get(c) is None else r[c] if isinstance(r[c], str) else json.dumps(r[c])
                         for c in columns])
    return out.getvalue()


def promptfoo_seed() -> dict:
    return {"evalId": "e", "results": {"version": 3, "results": [{
        "testIdx": 0, "promptIdx": 0, "prompt": {"raw": "hi", "label": "p"}, "vars": {"q": "hi"},
        "response": {"output": "hello"}, "success": True, "score": 1,
        "testCase": {"vars": {"q": "hi"}, "assert": [{"type": "equals", "value": "hello"}]},
        "provider": {"id": "echo"}}]}}


def seed_file(fmt: str, rng: random.Random) -> tuple[str, bytes]:
    """(file name, bytes) of a valid-looking input for ``fmt``, structurally mutated or not."""
    def maybe(value):
        return mutate_structure(rng, value) if rng.random() < 0.8 else value

    records = [maybe(dict(CASE, id=str(n))) for n in range(rng.randint(1, 3))]
    if fmt == "jsonl":
        return "cases.jsonl", "".join(json.dumps(r, ensure_ascii=rng.random() < 0.5) + "\n" for r in records) \
            .encode("utf-8", "surrogatepass")
    if fmt == "json":
        return "cases.json", json.dumps(maybe(records)).encode()
    if fmt == "csv":
        return "cases.csv", csv_text(records).encode("utf-8", "surrogatepass")
    if fmt in ("otel", "otel-trace"):
        return "traces.otlp.jsonl", "".join(json.dumps(maybe(r)) + "\n" for r in (otlp_seed(), otlp_logs_seed())) \
            .encode()
    if fmt == "promptfoo":
        return "results.json", json.dumps(maybe(promptfoo_seed())).encode()
    if fmt == "inspect":
        return "log.json", json.dumps(maybe({"version": 2, "status": "success", "eval": {"task": "t"},
                                             "samples": [{"id": 1, "input": "hi", "target": "x",
                                                          "output": {"completion": "x"}}]})).encode()
    return f"data.{fmt}", json.dumps(maybe(records)).encode()


# -- running one input ---------------------------------------------------------------------------------

class Doors:
    """The application, a database and the checks every input goes through."""

    def __init__(self, tmp_path) -> None:
        from evalyard import Application

        self.app = Application()
        self.dir = tmp_path / "inputs"
        self.dir.mkdir()
        self.db = tmp_path / "fuzz.db"
        self.tried = 0
        self.outcomes: dict[int, int] = {}

    def run(self, args: list[str], what: str) -> None:
        self.tried += 1
        result = CliRunner().invoke(_cli(), [*args, "--db", f"sqlite:///{self.db}"], obj=self.app,
                                    catch_exceptions=True)
        exception = result.exception
        if exception is not None and not isinstance(exception, SystemExit):
            import traceback

            trace = "".join(traceback.format_exception(type(exception), exception, exception.__traceback__))
            pytest.fail(f"{what}: an exception escaped `evalyard {' '.join(args)}`:\n{trace}")
        self.outcomes[result.exit_code] = self.outcomes.get(result.exit_code, 0) + 1
        assert result.exit_code in (0, 1, 2), f"{what}: exit {result.exit_code}: {result.output[-2000:]}"
        assert "Traceback" not in result.output, f"{what}: {result.output[-3000:]}"
        if result.exit_code == 2:
            lines = [line for line in result.output.splitlines() if line.strip()]
            assert lines and lines[-1].startswith("Error: "), f"{what}: {result.output[-2000:]}"
        running = self.running()
        assert not running, f"{what}: runs left running: {running}"

    def running(self) -> list:
        if not self.db.exists():
            return []
        with sqlite3.connect(self.db) as connection:
            try:
                return connection.execute("SELECT id FROM runs WHERE status = 'running'").fetchall()
            except sqlite3.OperationalError:
                return []

    def write(self, name: str, data: bytes):
        path = self.dir / name
        path.write_bytes(data)
        return path


def _cli():
    from evalyard.cli import cli

    return cli


def describe(data: bytes) -> str:
    return repr(data[:600])


def fuzz_formats(doors: Doors, rng: random.Random, deadline: float) -> None:
    formats = sorted(e.name for e in doors.app.registry.loaders)
    while time.monotonic() < deadline:
        fmt = rng.choice(formats)
        name, data = seed_file(fmt, rng)
        if rng.random() < 0.4:
            data = mutate_bytes(rng, data)
        path = doors.write(name, data)
        doors.run(["run", str(path), "--format", fmt, "-s", "exact_match"], f"format {fmt}, input {describe(data)}")


SUITE_SEED = {"name": "fuzz", "description": "d", "cases": [CASE, dict(CASE, id="b")],
              "scorers": ["exact_match", {"name": "json_valid", "threshold": 0.5}],
              "thresholds": {"exact_match": 1}, "epochs": 1, "reducer": "mean",
              "models": {"m": {"params": {"seed": 1}}}, "cluster": "metadata.k"}


def fuzz_suites(doors: Doors, rng: random.Random, deadline: float) -> None:
    import yaml

    (doors.dir / "data.jsonl").write_text(json.dumps(CASE) + "\n")
    while time.monotonic() < deadline:
        suite = dict(SUITE_SEED)
        if rng.random() < 0.3:
            del suite["cases"]
            suite["data"] = rng.choice(["data.jsonl", "missing.jsonl", "", "../", "\ud800.jsonl"])
        suite = mutate_structure(rng, suite)
        text = yaml.safe_dump(suite, allow_unicode=True) if rng.random() < 0.5 else json.dumps(suite)
        data = text.encode("utf-8", "surrogatepass")
        if rng.random() < 0.3:
            data = mutate_bytes(rng, data)
        if rng.random() < 0.15:  # YAML's own types, which JSON does not have
            data += rng.choice([b"\nx_date: 2024-01-01\n", b"\ncases: [{id: a, metadata: {d: 2024-01-01}}]\n",
                                b"\ncases: [{id: a, candidate: x, metadata: {1: a, b: c}}]\n",
                                b"\ncases: [{id: !!binary aGk=, candidate: x}]\n", b"\nname: &a [*a]\n"])
        path = doors.write("suite.yaml", data)
        doors.run(["run", str(path)], f"suite file {describe(data)}")


REDUCER_PARTS = ["mean", "median", "mode", "max", "min", "pass_at_k", "at_least_k", "exact_match", "json_valid",
                 "k", "value", "=", ":", ",", "1", "0", "-1", "2", "1e309", "nan", "inf", "-inf", "1.5", "", " ",
                 "\ud800", "é", "k=", "value=", "pass_at_k:k=", "=mean", "x" * 50]


def fuzz_reducers(doors: Doors, rng: random.Random, deadline: float) -> None:
    path = doors.write("cases.jsonl", "".join(json.dumps({"id": str(n), "candidate": "a", "reference": "a"}) + "\n"
                                              for n in range(3)).encode())
    while time.monotonic() < deadline:
        values = ["".join(rng.choice(REDUCER_PARTS) for _ in range(rng.randint(1, 6)))
                  for _ in range(rng.randint(1, 2))]
        args = ["run", str(path), "-s", "exact_match", "--epochs", str(rng.randint(1, 3))]
        for value in values:
            args += ["--reducer", value]
        doors.run(args, f"--reducer {values!r}")


# -- the receiver ----------------------------------------------------------------------------------------

STATUSES = {b"200", b"400", b"401", b"404", b"405", b"411", b"413", b"415", b"501", b"505", b"414", b"431"}


def random_request(rng: random.Random, token: str) -> tuple[bytes, str]:
    """The bytes of one HTTP request (valid, or not), and a description of it."""
    signal_path = rng.choice(["/v1/traces", "/v1/logs", "/v1/traces?x=1", "/", "/v1/metrics", "/\xff".encode(
        "latin-1").decode("latin-1"), "*"])
    kind = rng.choice(["json", "json", "protobuf", "garbage"])
    if kind == "json":
        request = mutate_structure(rng, rng.choice([otlp_seed(), otlp_logs_seed(), span_request(3)])) \
            if rng.random() < 0.8 else otlp_seed()
        body = json.dumps(request, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass")
        content_type = "application/json"
    elif kind == "protobuf":
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
        from google.protobuf.json_format import ParseDict

        message = ParseDict(_as_protobuf_json(otlp_seed()), ExportTraceServiceRequest())
        body = message.SerializeToString()
        content_type = "application/x-protobuf"
    else:
        body = rng.randbytes(rng.randint(0, 300))
        content_type = rng.choice(["application/json", "application/x-protobuf", "text/plain", ""])
    if rng.random() < 0.3:
        body = mutate_bytes(rng, body)
    encoding = rng.choice([None, None, "gzip", "gzip", "deflate", "br", "GZIP", "identity"])
    if encoding and encoding.lower() == "gzip":
        body = gzip.compress(body)
        if rng.random() < 0.3:
            body = body[:rng.randrange(len(body) + 1)]  # cut short
        if rng.random() < 0.1:
            body = gzip.compress(b"{" + b" " * 2_000_000 + b"}")  # a small body, large once inflated
    elif encoding == "deflate":
        body = zlib.compress(body)
    length = str(len(body))
    roll = rng.random()
    if roll < 0.08:
        length = rng.choice(["-1", "+1", "1e3", "", " ", "0x10", "99999999999999999999", str(len(body) + 10),
                             str(max(0, len(body) - 5)), "٣", "-0", str(64 * 1024 * 1024)])
    headers = [f"Host: fuzz"]
    if content_type:
        headers.append(f"Content-Type: {content_type}")
    if roll < 0.95 or roll >= 0.08:
        headers.append(f"Content-Length: {length}")
    if encoding:
        headers.append(f"Content-Encoding: {encoding}")
    auth = rng.random()
    if auth < 0.85:
        headers.append(f"Authorization: Bearer {token}")
    elif auth < 0.92:
        headers.append(f"Authorization: {rng.choice(['Bearer', 'Basic x', 'Bearer ' + token + 'x', token])}")
    if rng.random() < 0.05:
        headers.append("Transfer-Encoding: chunked")
    if rng.random() < 0.05:
        headers.append("X-Junk: " + "a" * rng.randint(1, 70000))
    method = "POST" if rng.random() < 0.92 else rng.choice(["GET", "PUT", "POST /x HTTP/1.1", "DELETE"])
    version = "HTTP/1.1" if rng.random() < 0.95 else rng.choice(["HTTP/1.0", "HTTP/2", "HTTP/9.9", ""])
    head = f"{method} {signal_path} {version}\r\n" + "\r\n".join(headers) + "\r\n\r\n"
    what = f"{head[:400]!r} body {describe(body[:200])} ({len(body)} bytes)"
    return head.encode("utf-8", "surrogateescape") + body, what


def _as_protobuf_json(request: dict) -> dict:
    """OTLP/JSON's hex ids as protobuf's JSON mapping wants them (base64)."""
    out = json.loads(json.dumps(request))
    for resource in out.get("resourceSpans", []):
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId"):
                    span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return out


def send(port: int, data: bytes, timeout: float = 10) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except OSError:  # the receiver answered and closed before taking everything: fine
            pass
        chunks = []
        try:
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        except (ConnectionResetError, TimeoutError, OSError):
            pass
    return b"".join(chunks)


def fuzz_receiver(evalyard_exe, cli_env, tmp_path, rng: random.Random, deadline: float) -> int:
    receiver = Collect(evalyard_exe, cli_env, tmp_path / "collected.otlp.jsonl")
    tried = 0
    try:
        while time.monotonic() < deadline:
            data, what = random_request(rng, receiver.token)
            answer = send(receiver.port, data)
            tried += 1
            assert receiver.process.poll() is None, f"the receiver died on {what}: {receiver.seen}"
            # no answer: it closed the connection (a client that sent too little), which is fine; a request
            # line that is not HTTP/1.x gets http.server's error page without a status line (HTTP/0.9's way)
            if answer and not answer.startswith(b"<!DOCTYPE HTML>"):
                status = answer[9:12]
                assert answer.startswith(b"HTTP/1.") and status in STATUSES, f"{what}: answered {answer[:300]!r}"
        took = receiver.terminate()
        closing = receiver.closing_line()
        while not receiver.lines.empty():
            receiver.seen.append(receiver.lines.get())
        assert receiver.process.returncode == 0, receiver.seen
        assert took < 5, took
        assert not any("Traceback" in line for line in receiver.seen), "\n".join(receiver.seen)
        assert closing.startswith("stopped: ")
        # what it stored reads back as a suite: each line a request --format otel takes
        from evalyard.otlp_in import _Source, records_of

        for n, line in enumerate(receiver.stored_lines(), 1):
            list(records_of(line, _Source("collected", n)))
    finally:
        receiver.kill()
    return tried


def test_fuzz_every_door(installed_plugins, tmp_path, evalyard_exe, cli_env, capsys):
    pytest.importorskip("evalyard_lexicon", reason="exact_match comes from the lexicon plugin")
    pytest.importorskip("opentelemetry.proto", reason="the receiver's protobuf needs opentelemetry-proto")
    rng = random.Random(SEED)
    doors = Doors(tmp_path)
    counts = {}
    start = time.monotonic()
    deadline = start
    for door, share in SHARES.items():
        deadline += share * BUDGET_S
        before = doors.tried
        if door == "formats":
            fuzz_formats(doors, rng, deadline)
        elif door == "suites":
            fuzz_suites(doors, rng, deadline)
        elif door == "reducers":
            fuzz_reducers(doors, rng, deadline)
        else:
            counts[door] = fuzz_receiver(evalyard_exe, dict(cli_env, EVALYARD_LOAD_PLUGINS=""), tmp_path, rng,
                                         deadline)
            continue
        counts[door] = doors.tried - before
    with capsys.disabled():
        print(f"\nfuzzed the doors for {time.monotonic() - start:.0f}s with seed {SEED}: {counts} inputs "
              f"({sum(counts.values())} in all); exit codes of evalyard run: {doors.outcomes}")
    assert all(counts.values()), counts
