"""``evalyard collect`` against real HTTP clients, the receiver in its own process (issue 50,
defects 1 and 4): a record holding text that cannot be stored is refused (400); a negative or
malformed Content-Length is refused before any body is read; a stop ends the receiver within
a second or two even while an exporter keeps its connection alive or keeps sending, and every
request answered 200 is stored; many large bodies at once cost one body's memory; a body over
the cap once decompressed is 413; listening beyond loopback says so; the closing line counts
what was stored. Waits poll with deadlines."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import threading
import time

import pytest

from collect_server import Collect, raw_request, span_request

pytest.importorskip("opentelemetry.proto", reason="opentelemetry-proto is not installed (the test extra has it)")


@pytest.fixture
def collect(evalyard_exe, cli_env, tmp_path):
    started = []

    def start(*extra: str) -> Collect:
        receiver = Collect(evalyard_exe, cli_env, tmp_path / "traces.otlp.jsonl", *extra)
        started.append(receiver)
        return receiver

    yield start
    for receiver in started:
        receiver.kill()


def test_a_record_with_a_lone_surrogate_is_refused_and_not_stored(collect):
    receiver = collect()
    request = span_request()
    request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"][1]["value"]["stringValue"] = "m\ud800"
    status, answer = receiver.post(json.dumps(request).encode())  # ensure_ascii: the escape "\ud800" is sent
    assert status == 400
    assert answer["message"].startswith("request:1: field 'resourceSpans[0].scopeSpans[0].spans[0].attributes[1]."
                                        "value.stringValue': text that is not valid Unicode: a lone surrogate")
    assert receiver.post(json.dumps(span_request()).encode())[0] == 200
    receiver.terminate()
    assert receiver.closing_line().startswith("stopped: 1 request(s) stored, 1 GenAI spans")
    assert receiver.stored_lines() == [span_request()]


@pytest.mark.parametrize("length", ["-1", "+5", " 5x", "1_0", "0x10", "٣"])
def test_a_negative_or_malformed_content_length_is_refused(collect, length):
    receiver = collect()
    body = json.dumps(span_request()).encode()
    head = (f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {receiver.token}\r\nContent-Length: {length}\r\n\r\n").encode("utf-8")
    answer = raw_request("127.0.0.1", receiver.port, head, body, timeout=10)
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert b"invalid Content-Length" in answer
    receiver.terminate()
    assert receiver.stored_lines() == []


def test_conflicting_content_lengths_are_refused(collect):
    receiver = collect()
    body = json.dumps(span_request()).encode()
    head = (f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {receiver.token}\r\nContent-Length: {len(body)}\r\n"
            f"Content-Length: 3\r\n\r\n").encode()
    assert raw_request("127.0.0.1", receiver.port, head, body, timeout=10).startswith(b"HTTP/1.1 400")
    receiver.terminate()
    assert receiver.stored_lines() == []


def test_a_stop_closes_idle_keep_alive_connections_at_once(collect):
    receiver = collect()
    connection = receiver.connection()
    try:
        assert receiver.post(json.dumps(span_request()).encode(), connection=connection)[0] == 200
        # the exporter keeps its connection open, idle: the stop must not wait for it
        assert receiver.terminate() < 2.5
    finally:
        connection.close()
    assert receiver.closing_line().startswith("stopped: 1 request(s) stored")


def test_a_stop_while_an_exporter_keeps_sending_finishes_what_it_answered(collect):
    receiver = collect()
    answered: list[int] = []
    stop = threading.Event()

    def exporter():
        connection = receiver.connection(timeout=10)
        try:
            while not stop.is_set():
                status, _ = receiver.post(json.dumps(span_request()).encode(), connection=connection)
                answered.append(status)
                if status != 200:
                    break
        except OSError:  # the receiver closed the connection: the exporter would retry elsewhere
            pass
        finally:
            connection.close()

    thread = threading.Thread(target=exporter)
    thread.start()
    deadline = time.monotonic() + 30
    while len(answered) < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(answered) >= 5
    took = receiver.terminate()
    stop.set()
    thread.join(timeout=30)
    assert took < 2.5
    assert len(receiver.stored_lines()) == answered.count(200)  # everything acknowledged, nothing more
    assert receiver.closing_line().startswith(f"stopped: {answered.count(200)} request(s) stored")


def peak_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the peak RSS from /proc")
def test_many_large_bodies_at_once_cost_one_bodys_memory(collect):
    receiver = collect()
    body = json.dumps(span_request(n=16_000)).encode()  # ~4 MiB of spans: parsing one costs several times that
    assert receiver.post(json.dumps(span_request()).encode())[0] == 200  # warmed up: imports done
    start = peak_rss_kib(receiver.process.pid)
    assert receiver.post(body)[0] == 200
    alone = peak_rss_kib(receiver.process.pid)  # the peak of one such request
    statuses: list[int] = []
    threads = [threading.Thread(target=lambda: statuses.append(receiver.post(body)[0])) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert statuses == [200] * 6
    together = peak_rss_kib(receiver.process.pid)
    # one body at a time: six at once peak about where one did (98440b5: about six times as high)
    assert together - alone < 0.5 * (alone - start) + 16 * 1024, (start, alone, together)
    receiver.terminate()
    assert len(receiver.stored_lines()) == 8


def test_a_body_over_the_cap_once_decompressed_is_413(collect):
    receiver = collect("--max-body", "65536")
    inflated = json.dumps(span_request(attribute_size=200_000)).encode()
    squeezed = gzip.compress(inflated)
    assert len(squeezed) < 65536 < len(inflated)
    status, answer = receiver.post(squeezed, {"Content-Encoding": "gzip"})
    assert status == 413 and "once decompressed" in answer["message"]
    assert receiver.post(gzip.compress(json.dumps(span_request()).encode()), {"Content-Encoding": "gzip"})[0] == 200
    receiver.terminate()
    assert len(receiver.stored_lines()) == 1


def test_listening_on_every_interface_says_so(collect):
    receiver = collect("--host", "0.0.0.0")
    warning = receiver.wait_for(lambda line: line.startswith("warning:"), "the warning")
    assert "every network interface" in warning and "--host 127.0.0.1" in warning
    receiver.terminate()


def test_listening_on_loopback_says_nothing_more(collect):
    receiver = collect()
    receiver.terminate()
    receiver.closing_line()
    assert not any(line.startswith("warning:") for line in receiver.seen)


def test_the_closing_line_counts_what_a_run_exported_to_it(collect, evalyard_exe, cli_env, tmp_path):
    """``evalyard run --otel`` to a second receiver: 20 evaluation events (and no GenAI span: the
    run's span is evalyard's own) are stored, and the closing line says 20 events."""
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
    receiver = collect()
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps({"id": str(n), "candidate": "{}"}) + "\n" for n in range(20)))
    env = dict(cli_env, EVALYARD_OTEL_ENDPOINT=receiver.endpoint,
               OTEL_EXPORTER_OTLP_HEADERS=f"Authorization=Bearer%20{receiver.token}")
    done = subprocess.run([evalyard_exe, "run", str(data), "-s", "json_valid", "--otel", "--json"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    receiver.terminate()
    stored = receiver.stored_lines()
    records = [r for line in stored for resource in line.get("resourceLogs") or []
               for scope in resource["scopeLogs"] for r in scope["logRecords"]]
    spans = [s for line in stored for resource in line.get("resourceSpans") or []
             for scope in resource["scopeSpans"] for s in scope["spans"]]
    assert len(records) == 20
    assert receiver.closing_line() == (f"stopped: {len(stored)} request(s) stored, {len(spans)} GenAI spans and 20 "
                                       f"events in {receiver.output}")
