"""``evalyard collect FILE``: an OTLP/HTTP receiver that keeps what an instrumented application
sends of its GenAI telemetry, as a suite file that ``evalyard run FILE`` scores later.

A command of its own rather than a ``serve`` option: ``serve`` is the read-only dashboard over
the database (Flask); this one writes, needs neither Flask nor the database, and listens where
an application's OTLP exporter sends (port 4318 by default).

Each request is checked, reduced to its GenAI spans and log records, and appended to FILE as
one OTLP/JSON line (flushed and fsynced) before it is answered: memory holds one request at
most (``--max-body``), and a stop (Ctrl-C, SIGTERM) lets the requests being read finish, so
nothing acknowledged is lost. A request without the token is refused (401) before its body is
read, and stores nothing.
"""

from __future__ import annotations

import gzip
import hmac
import json
import os
import secrets
import signal
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import click

from ..errors import InputError
from .options import CLIError

SIGNALS = {"/v1/traces": "traces", "/v1/logs": "logs"}
TOKEN_ENV = "EVALYARD_COLLECT_TOKEN"
IDLE_S = 5.0


class Collector:
    """The receiver's state: the output file (appended under a lock) and what it has stored."""

    def __init__(self, path: Path, token: str, max_body: int) -> None:
        self.path, self.token, self.max_body = path, token, max_body
        self.lock = threading.Lock()
        self.handle = open(path, "a", encoding="utf-8")
        self.spans = self.events = self.requests = 0

    def authorized(self, header: str | None) -> bool:
        scheme, _, value = (header or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self.token.encode())

    def store(self, request: dict) -> None:
        from ..otlp_in import _Source, genai_only, records_of

        # checked as --format otel will read it, so a bad request is refused now, not at the run
        where = _Source("request", self.requests + 1, "request")
        list(records_of(request, where))
        kept = genai_only(request)
        if kept is None:
            return
        counted = list(records_of(kept, where))
        line = json.dumps(kept, separators=(",", ":")) + "\n"
        with self.lock:
            self.handle.write(line)
            self.handle.flush()
            os.fsync(self.handle.fileno())
            self.requests += 1
            self.spans += sum(kind == "span" for kind, *_ in counted)
            self.events += sum(kind == "event" for kind, *_ in counted)

    def close(self) -> None:
        with self.lock:
            self.handle.close()


def make_handler(collector: Collector):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # An exporter keeps its connection open between requests; a stop waits for the handler
        # threads, so an idle connection is closed after this many seconds instead of holding it.
        timeout = IDLE_S

        def do_POST(self):  # noqa: N802 - http.server's name
            signal_name = SIGNALS.get(self.path.split("?")[0])
            if signal_name is None:
                return self.answer(404, "no such OTLP endpoint (/v1/traces, /v1/logs)")
            if not collector.authorized(self.headers.get("Authorization")):
                return self.answer(401, "missing or wrong token (Authorization: Bearer TOKEN)")
            try:
                length = int(self.headers.get("Content-Length") or "")
            except ValueError:
                return self.answer(411, "a Content-Length is required")
            if length > collector.max_body:
                return self.answer(413, f"body over {collector.max_body} bytes")
            body = self.rfile.read(length)
            try:
                body = self.decode(body)
                content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
                if content_type == "application/json":
                    request = json.loads(body)
                elif content_type == "application/x-protobuf":
                    from ..otlp_in import protobuf_to_json

                    request = protobuf_to_json(body, signal_name)
                else:
                    return self.answer(415, "expected application/x-protobuf or application/json")
                collector.store(request)
            except (InputError, ValueError, OSError) as exc:  # DecodeError is a ValueError... mostly
                return self.answer(400, str(exc).splitlines()[0])
            except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError, a malformed message
                return self.answer(400, f"{type(exc).__name__}: {exc}".splitlines()[0])
            self.answer(200, None, content_type)

        def decode(self, body: bytes) -> bytes:
            encoding = (self.headers.get("Content-Encoding") or "identity").lower()
            if encoding == "identity":
                return body
            if encoding != "gzip":
                raise ValueError(f"unsupported Content-Encoding {encoding!r} (gzip or none)")
            # bounded: a small gzip body must not become gigabytes in memory
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            out = inflater.decompress(body, collector.max_body + 1)
            if len(out) > collector.max_body:
                raise ValueError(f"body over {collector.max_body} bytes once decompressed")
            return out

        def answer(self, status: int, message: str | None, content_type: str = "application/json") -> None:
            if content_type == "application/x-protobuf" and status == 200:
                payload = b""  # an empty Export*ServiceResponse: everything accepted
            else:
                payload = json.dumps({} if message is None else {"message": message}).encode()
                content_type = "application/json"
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            if status >= 400 and status != 400:
                self.send_header("Connection", "close")  # the unread body must not be parsed as a request
                self.close_connection = True
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    return Handler


@click.command()
@click.argument("output", type=click.Path(dir_okay=False, writable=True, path_type=Path))
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything but 127.0.0.1 accepts telemetry from the network.")
@click.option("--port", "-p", default=4318, show_default=True, type=click.IntRange(0, 65535),
              help="The port to listen on (0: any free port; 4318 is OTLP/HTTP's).")
@click.option("--token", envvar=TOKEN_ENV, metavar="TOKEN",
              help=f"The token a request must carry (Authorization: Bearer TOKEN). Default: ${TOKEN_ENV}, "
                   "else a new one, printed.")
@click.option("--max-body", default=16 * 1024 * 1024, show_default=True, type=click.IntRange(1024), metavar="BYTES",
              help="Refuse (413) a request body larger than this, compressed or not.")
def collect(output, host, port, token, max_body):
    """Receive an application's GenAI traces over OTLP/HTTP and keep them as a suite file.

    Listens for OTLP/HTTP (/v1/traces and /v1/logs; protobuf or JSON; gzip) and appends each
    request's GenAI spans and log records to OUTPUT as OTLP/JSON lines. Score them later with
    `evalyard run OUTPUT` (an OUTPUT ending in .otlp.jsonl is read as --format otel: one case
    per model call; --format otel-trace: one per trace). Ctrl-C or SIGTERM stops it once the
    requests being received are stored.
    """
    generated = not token
    token = token or secrets.token_urlsafe(24)
    try:
        collector = Collector(output, token, max_body)
    except OSError as exc:
        raise CLIError(f"cannot write {output}: {exc.strerror or exc}") from None
    try:
        server = ThreadingHTTPServer((host, port), make_handler(collector))
    except OSError as exc:
        collector.close()
        raise CLIError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    server.daemon_threads = False  # server_close() waits for the requests in flight
    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    address = f"http://{host}:{server.server_port}"
    click.echo(f"evalyard collect on {address} (OTLP/HTTP /v1/traces, /v1/logs), writing {output}; "
               "Ctrl-C stops it")
    if generated:
        click.echo(f"token: {token}")
    click.echo(f"  OTEL_EXPORTER_OTLP_ENDPOINT={address} "
               f"OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20{token if generated else 'TOKEN'}")
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.shutdown()
        server.server_close()
        collector.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    click.echo(f"stopped: {collector.requests} request(s) stored, {collector.spans} GenAI spans and "
               f"{collector.events} events in {output}")


def register(cli: click.Group) -> None:
    cli.add_command(collect)
