"""``evalyard collect`` in a process of its own, for the tests of the receiver: its output lines
(stdout and stderr) in a queue, waits that poll with deadlines, and requests over real HTTP."""

from __future__ import annotations

import http.client
import json
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path

TOKEN = "test-token-0123456789"


class Collect:
    def __init__(self, exe: str, env: dict, output: Path, *extra: str, token: str = TOKEN) -> None:
        self.output, self.token = output, token
        self.process = subprocess.Popen([exe, "collect", str(output), "--port", "0", "--token", token, *extra],
                                        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        ready = self.wait_for(lambda line: line.startswith("evalyard collect on "), "the receiver to listen")
        self.endpoint = ready.split()[3]
        self.host, _, port = self.endpoint.removeprefix("http://").rpartition(":")
        self.port = int(port)

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, accept, what: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                if self.process.poll() is not None and self.lines.empty():
                    raise AssertionError(f"evalyard collect exited ({self.process.returncode}) before {what}: "
                                         f"{self.seen}")
                continue
            self.seen.append(line)
            if accept(line):
                return line
        raise AssertionError(f"timed out waiting for {what}: {self.seen}")

    def terminate(self) -> float:
        """SIGTERM; the seconds until the process has exited."""
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=60)
        return time.monotonic() - started

    def closing_line(self) -> str:
        return self.wait_for(lambda line: line.startswith("stopped:"), "the closing line", timeout=10)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def connection(self, timeout: float = 30) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def post(self, body: bytes, headers: dict | None = None, path: str = "/v1/traces",
             connection: http.client.HTTPConnection | None = None) -> tuple[int, dict]:
        """One request (on ``connection`` if given, kept open); (status, the JSON answer)."""
        own = connection is None
        connection = connection or self.connection()
        try:
            connection.request("POST", path, body=body, headers={
                "Content-Type": "application/json", "Authorization": f"Bearer {self.token}", **(headers or {})})
            response = connection.getresponse()
            payload = response.read()
            return response.status, json.loads(payload) if payload else {}
        finally:
            if own:
                connection.close()

    def stored_lines(self) -> list[dict]:
        return [json.loads(line) for line in self.output.read_text().splitlines()] if self.output.exists() else []


def span_request(n: int = 1, attribute_size: int = 0) -> dict:
    """An OTLP/JSON traces request of ``n`` GenAI spans (one trace)."""
    spans = [{"traceId": "5b8efff798038103d269b633813fc60c", "spanId": f"{i + 1:016x}", "name": "chat m",
              "startTimeUnixNano": str(i + 1), "attributes": [
                  {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                  {"key": "gen_ai.request.model", "value": {"stringValue": "m" + "x" * attribute_size}}]}
             for i in range(n)]
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


def raw_request(host: str, port: int, head: bytes, body: bytes = b"", timeout: float = 30) -> bytes:
    """Bytes sent as they are (headers no client library would write); the answer's bytes."""
    import socket

    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(head + body)
        chunks = []
        sock.settimeout(timeout)
        while True:
            try:
                chunk = sock.recv(65536)
            except (ConnectionResetError, TimeoutError):
                break
            if not chunk:
                break
            chunks.append(chunk)
            if b"\r\n\r\n" in b"".join(chunks):
                head_end = b"".join(chunks).index(b"\r\n\r\n")
                header = b"".join(chunks)[:head_end].decode("latin-1").lower()
                length = next((int(line.split(":")[1]) for line in header.splitlines()
                               if line.startswith("content-length:")), 0)
                if len(b"".join(chunks)) >= head_end + 4 + length:
                    break
        return b"".join(chunks)
