"""A minimal OTLP/HTTP receiver for tests: it accepts what an exporter POSTs to ``/v1/traces``
and ``/v1/logs`` and decodes each request with OpenTelemetry's own protobuf definitions
(``opentelemetry-proto``), so the tests see exactly the bytes a real collector would get."""

from __future__ import annotations

import gzip
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def attributes(items) -> dict[str, Any]:
    """OTLP ``KeyValue`` attributes as a plain dict."""
    out = {}
    for item in items:
        value = item.value
        kind = value.WhichOneof("value")
        out[item.key] = getattr(value, kind) if kind else None
    return out


class OTLPReceiver:
    """Serves on 127.0.0.1 in a thread; ``status`` answers every request (e.g. 400 to refuse), or
    maps paths to answers (``{"/v1/logs": 404}``: a traces-only backend)."""

    def __init__(self, status: int | dict[str, int] = 200) -> None:
        self.status = status
        self.requests: list[tuple[str, bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                receiver.requests.append((self.path, body))
                status = receiver.status
                self.send_response(status.get(self.path, 200) if isinstance(status, dict) else status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> "OTLPReceiver":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def spans(self) -> list[Any]:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        found = []
        for path, body in self.requests:
            if path == "/v1/traces":
                request = ExportTraceServiceRequest.FromString(body)
                found += [span for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]
        return found

    def log_requests(self) -> list[Any]:
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

        return [ExportLogsServiceRequest.FromString(body) for path, body in self.requests if path == "/v1/logs"]

    def log_records(self) -> list[Any]:
        return [record for request in self.log_requests() for rl in request.resource_logs
                for sl in rl.scope_logs for record in sl.log_records]
