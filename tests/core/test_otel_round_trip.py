"""Traces in, evaluations back out, with a real instrumented client: a small application using the
OpenAI Python SDK and OpenTelemetry's OpenAI instrumentation (``instrumented_app.py``) calls the
fake OpenAI server and exports over OTLP/HTTP to ``evalyard collect``; ``evalyard run`` scores
what was collected and ``--otel`` sends each result to a real OTLP receiver, in the source span's
context. Every process is real (the console script, the SDK's exporters); waits poll with deadlines.

Also: the receiver refuses requests without its token (401) and stores nothing of them."""

from __future__ import annotations

import gzip
import json
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from importlib.util import find_spec
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed: pip install 'evalyard[otel]'")
pytest.importorskip("opentelemetry.proto", reason="opentelemetry-proto is not installed (the test extra has it)")
if find_spec("opentelemetry.instrumentation.openai_v2") is None or find_spec("openai") is None:
    pytest.skip("opentelemetry-instrumentation-openai-v2 (the test extra) or openai is not installed",
                allow_module_level=True)
if find_spec("evalyard_lexicon") is None:
    pytest.skip("the lexicon plugin is not installed", allow_module_level=True)

from otlp_receiver import OTLPReceiver, attributes  # noqa: E402

from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig  # noqa: E402

APP = Path(__file__).with_name("instrumented_app.py")
TOKEN = "test-token-0123456789"
QUESTIONS = ["Capital of France?", "Capital of Italy?", "Capital of Spain?"]


class Collect:
    """``evalyard collect FILE --port 0`` in its own process; its output lines in a queue."""

    def __init__(self, exe: str, env: dict, output: Path, *extra: str) -> None:
        self.process = subprocess.Popen([exe, "collect", str(output), "--port", "0", *extra], env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        ready = self.wait_for(lambda line: line.startswith("evalyard collect on "), "the receiver to listen")
        self.endpoint = ready.split()[3]

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, accept, what: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                if self.process.poll() is not None and self.lines.empty():
                    raise AssertionError(f"evalyard collect exited ({self.process.returncode}) before {what}")
                continue
            if accept(line):
                return line
        raise AssertionError(f"timed out waiting for {what}")

    def stop(self) -> str:
        """SIGTERM, then its closing line."""
        self.process.send_signal(signal.SIGTERM)
        line = self.wait_for(lambda line: line.startswith("stopped:"), "the receiver to stop")
        assert self.process.wait(timeout=30) == 0
        return line

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def post(url: str, body: bytes, headers: dict) -> int:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def announce_only(url: str, length: int, token: str) -> int:
    """A request announcing a body of ``length`` bytes, answered before any of it is sent."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.putrequest("POST", parts.path)
        for name, value in (("Content-Type", "application/json"), ("Content-Length", str(length)),
                            ("Authorization", f"Bearer {token}")):
            connection.putheader(name, value)
        connection.endheaders()
        return connection.getresponse().status
    finally:
        connection.close()


@pytest.mark.parametrize("capture", ["SPAN_ONLY", "EVENT_ONLY"])
def test_instrumented_application_to_collect_to_run_to_otel(cli_env, evalyard_exe, tmp_path, capture):
    collected = tmp_path / "traces.otlp.jsonl"
    with FakeOpenAIServer(FakeServerConfig(reply="Paris is the capital.")) as fake:
        collect = Collect(evalyard_exe, cli_env, collected, "--token", TOKEN)
        try:
            # SPAN_ONLY: the messages as span attributes; EVENT_ONLY: as the log event
            # gen_ai.client.inference.operation.details (this instrumentation's two shapes)
            app_env = dict(cli_env, OTEL_EXPORTER_OTLP_ENDPOINT=collect.endpoint,
                           OTEL_EXPORTER_OTLP_HEADERS=f"Authorization=Bearer%20{TOKEN}",
                           OTEL_SEMCONV_STABILITY_OPT_IN="gen_ai_latest_experimental",
                           OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=capture, OTEL_SERVICE_NAME="shop-bot")
            app = subprocess.run([sys.executable, str(APP), fake.base_url, *QUESTIONS], env=app_env,
                                 capture_output=True, text=True, timeout=120)
            assert app.returncode == 0, app.stderr
            trace_ids = json.loads(app.stdout)
            stopped = collect.stop()  # the exporters flushed before the app exited: all of it is stored
        finally:
            collect.kill()
    assert stopped.startswith("stopped: ") and " 3 GenAI spans" in stopped
    assert len(set(trace_ids)) == 3

    with OTLPReceiver() as receiver:
        run_env = dict(cli_env, EVALYARD_OTEL_ENDPOINT=receiver.endpoint, EVALYARD_LOAD_PLUGINS="lexicon")
        done = subprocess.run([evalyard_exe, "run", str(collected), "-s", "lexicon/specificity", "--otel", "--json"],
                              env=run_env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stderr == "", done.stderr
    summary = json.loads(done.stdout)
    assert summary["cases"] == 3

    cases = subprocess.run([evalyard_exe, "runs", "export", summary["run_id"], "--format", "jsonl"], env=cli_env,
                           capture_output=True, text=True, timeout=60)
    assert cases.returncode == 0, cases.stderr
    (run_span,) = receiver.spans()
    events = [r for r in receiver.log_records() if r.event_name == "gen_ai.evaluation.result"]
    assert len(events) == 3
    # each evaluation sits in its source trace, parented to the model call's span, not the run's
    by_case = {attributes(e.attributes)["evalyard.case.id"]: e for e in events}
    assert {e.trace_id.hex() for e in events} == set(trace_ids)
    for case_id, event in by_case.items():
        trace_id, span_id = case_id.split(":")
        assert (event.trace_id.hex(), event.span_id.hex()) == (trace_id, span_id)
        assert event.trace_id != run_span.trace_id
        assert attributes(event.attributes)["gen_ai.evaluation.name"] == "lexicon/specificity"


def test_collect_refuses_requests_without_its_token_and_stores_nothing(cli_env, evalyard_exe, tmp_path):
    collected = tmp_path / "traces.otlp.jsonl"
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "name": "chat m",
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]}]}]}]}).encode()
    collect = Collect(evalyard_exe, cli_env, collected)  # a generated token, printed
    try:
        token = collect.wait_for(lambda line: line.startswith("token: "), "the generated token").split()[1]
        url = f"{collect.endpoint}/v1/traces"
        json_type = {"Content-Type": "application/json"}
        assert post(url, body, json_type) == 401
        assert post(url, body, {**json_type, "Authorization": "Bearer wrong-token"}) == 401
        assert post(url, body, {**json_type, "Authorization": token}) == 401  # the scheme is part of it
        assert collected.read_text() == ""
        assert post(url, body, {**json_type, "Authorization": f"Bearer {token}"}) == 200
        gzipped = {**json_type, "Authorization": f"Bearer {token}", "Content-Encoding": "gzip"}
        assert post(url, gzip.compress(body), gzipped) == 200
        assert announce_only(url, 17 * 1024 * 1024, token) == 413  # refused before the body is read
        assert post(url, b"{not json", {**json_type, "Authorization": f"Bearer {token}"}) == 400
        stopped = collect.stop()
    finally:
        collect.kill()
    assert stopped.startswith("stopped: 2 request(s) stored, 2 GenAI spans")
    assert [json.loads(line) for line in collected.read_text().splitlines()] == [json.loads(body)] * 2
