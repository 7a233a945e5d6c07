"""``evalyard run --otel`` against a real OTLP/HTTP receiver from the package registry: OtelTap
(``oteltap``, in the test extra), a receiver written in Rust that decodes OTLP/HTTP protobuf with
its own stack and prints every span and log record it gets as OTLP JSON lines. The run goes
through the installed console script, the receiver in its own process."""

from __future__ import annotations

import json
import queue
import socket
import subprocess
import sys
import threading
import time
from importlib.util import find_spec

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed: pip install 'evalyard[otel]'")
if find_spec("oteltap") is None:
    pytest.skip("the OTLP receiver oteltap is not installed (the test extra has it): pip install oteltap",
                allow_module_level=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Receiver:
    """``python -m oteltap --port PORT`` in a process of its own; its output lines in a queue."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process = subprocess.Popen([sys.executable, "-u", "-m", "oteltap", "--port", str(self.port)],
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        try:
            self.wait_for(lambda line: line.startswith("Listening"), what="the receiver to listen")
        except AssertionError as exc:  # its wheel bundles a native library for some platforms only
            self.stop()
            pytest.skip(f"the oteltap receiver did not start here: {exc}")

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, accept, what: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                if self.process.poll() is not None:
                    raise AssertionError(f"the receiver exited ({self.process.returncode}) before {what}")
                continue
            if accept(line):
                return line
        raise AssertionError(f"timed out waiting for {what}")

    def telemetry(self, count: int) -> list[dict]:
        return [json.loads(self.wait_for(lambda line: line.startswith("{"), what=f"{count} items")) for _ in range(count)]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def values(items: list[dict]) -> dict:
    return {item["key"]: next(iter(item["value"].values()), None) for item in items}


def test_a_run_arrives_at_a_real_receiver(cli_env, evalyard_exe, tmp_path):
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps({"id": k, "candidate": k, "metadata": {"script": v}}) + "\n"
                            for k, v in {"a": 1.0, "b": 0.25, "c": "raise"}.items()))
    receiver = Receiver()
    try:
        env = dict(cli_env, EVALYARD_OTEL_ENDPOINT=f"http://127.0.0.1:{receiver.port}")
        done = subprocess.run([evalyard_exe, "run", str(data), "-s", "scripted", "--otel", "--json"], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        run = json.loads(done.stdout)
        received = receiver.telemetry(4)
    finally:
        receiver.stop()
    [span] = [item for item in received if item.get("name") == "evalyard.run"]
    events = [item for item in received if item.get("eventName") == "gen_ai.evaluation.result"]
    assert len(events) == 3
    stats = values(span["attributes"])
    assert stats["evalyard.run.id"] == run["run_id"] and stats["evalyard.run.status"] == "completed"
    assert stats["evalyard.scorer.scripted.mean"] == pytest.approx(run["scorers"]["scripted"]["mean"])
    assert [stats["evalyard.scorer.scripted.ci95.lower"], stats["evalyard.scorer.scripted.ci95.upper"]] == \
        pytest.approx(run["scorers"]["scripted"]["ci95"])
    by_case = {values(e["attributes"])["evalyard.case.id"]: e for e in events}
    assert {(e["traceId"], e["spanId"]) for e in events} == {(span["traceId"], span["spanId"])}
    assert values(by_case["b"]["attributes"])["gen_ai.evaluation.score.value"] == 0.25
    assert values(by_case["b"]["attributes"])["gen_ai.evaluation.name"] == "scripted"
    assert values(by_case["c"]["attributes"])["error.type"] == "ValueError"
