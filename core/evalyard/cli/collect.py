"""``evalyard collect FILE``: an OTLP/HTTP receiver that keeps what an instrumented application
sends of its GenAI telemetry, as a suite file that ``evalyard run FILE`` scores later.

A command of its own rather than a ``serve`` option: ``serve`` is the read-only dashboard over
the database (Flask); this one writes, needs neither Flask nor the database, and listens where
an application's OTLP exporter sends (port 4318 by default).

Each request is checked, reduced to its GenAI spans and log records, and appended to FILE as
one OTLP/JSON line (flushed and fsynced) before it is answered. Bodies arrive side by side into
spool files (a megabyte in memory at most each); one at a time is then read, decoded, checked and
stored, so memory holds one request however many exporters send at once (``--max-body``). A
stop (Ctrl-C, SIGTERM) lets the requests being read finish, closes idle keep-alive connections
at once and answers no new request, so nothing acknowledged is lost and the receiver is gone
within a second or two. A request without the token is refused (401) before its body is read,
and stores nothing.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import re
import secrets
import select
import signal
import tempfile
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import click

from ..errors import InputError
from .options import CLIError

SIGNALS = {"/v1/traces": "traces", "/v1/logs": "logs"}
TOKEN_ENV = "EVALYARD_COLLECT_TOKEN"
IDLE_S = 5.0
#: how often a connection waiting for its next request looks whether the receiver is stopping
STOP_POLL_S = 0.1
#: a body's bytes kept in memory while it arrives; the rest goes to a temporary file
SPOOL_MEMORY = 1024 * 1024
CHUNK = 64 * 1024
_DIGITS = re.compile(r"[0-9]+")


class BodyTooLarge(ValueError):
    """A body over ``--max-body``, found once it is decompressed (413, as one announced so)."""


class Collector:
    """The receiver's state: the output file (appended under a lock) and what it has stored."""

    def __init__(self, path: Path, token: str, max_body: int) -> None:
        self.path, self.token, self.max_body = path, token, max_body
        self.lock = threading.Lock()
        #: one body decoded, parsed and stored at a time: what bounds the receiver's memory
        self.one_at_a_time = threading.Lock()
        #: set by a stop: no new request is read, and each answer closes its connection
        self.stopping = threading.Event()
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
        spans, events = _counts(kept)
        line = json.dumps(kept, separators=(",", ":")) + "\n"
        with self.lock:
            self.handle.write(line)
            self.handle.flush()
            os.fsync(self.handle.fileno())
            self.requests += 1
            self.spans += spans
            self.events += events

    def close(self) -> None:
        with self.lock:
            self.handle.close()


def _counts(kept: dict) -> tuple[int, int]:
    """The GenAI spans and events (log records, and span events named gen_ai.*) a kept request
    holds: what the closing line reports, whichever GenAI events they are (evaluation results too)."""
    spans = events = 0
    for resource in kept.get("resourceSpans") or []:
        for scope in resource.get("scopeSpans") or []:
            for span in scope.get("spans") or []:
                spans += 1
                events += sum(isinstance(e, dict) and str(e.get("name") or "").startswith("gen_ai.")
                              for e in span.get("events") or [])
    for resource in kept.get("resourceLogs") or []:
        for scope in resource.get("scopeLogs") or []:
            events += len(scope.get("logRecords") or [])
    return spans, events


class Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() waits for the requests in flight

    def handle_error(self, request, client_address):
        # a client that went away mid-request is its own business; anything else is one line, no traceback
        import sys

        error = sys.exc_info()[1]
        if not isinstance(error, OSError):
            click.echo(f"collect: a request from {client_address[0]} failed: {type(error).__name__}: {error}"
                       .splitlines()[0], err=True)


def make_handler(collector: Collector):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # An exporter keeps its connection open between requests; a stop waits for the handler
        # threads, so an idle connection is closed after this many seconds instead of holding it.
        timeout = IDLE_S

        def handle(self):
            # http.server's loop, except that between requests the connection waits in
            # ``next_request``, which a stop ends at once (an exporter's keep-alive connection
            # would otherwise hold the stop for IDLE_S, or for ever while it keeps sending)
            self.close_connection = True
            if self.next_request():
                self.handle_one_request()
            while not self.close_connection and self.next_request():
                self.handle_one_request()

        def next_request(self) -> bool:
            """Whether a request is there to read (False: the receiver is stopping, the client
            closed, or it sent nothing for IDLE_S)."""
            deadline = time.monotonic() + IDLE_S
            while not collector.stopping.is_set():
                if self.buffered():
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                readable, _, _ = select.select([self.connection], [], [], min(STOP_POLL_S, remaining))
                if readable:
                    return True
            return False

        def buffered(self) -> bool:
            """Bytes of a next request already read into ``rfile``'s buffer (a client that sent
            it before this answer), which ``select`` on the socket would not see."""
            self.connection.settimeout(0)
            try:
                return bool(self.rfile.peek(1))
            except OSError:
                return False
            finally:
                self.connection.settimeout(self.timeout)

        def do_POST(self):  # noqa: N802 - http.server's name
            signal_name = SIGNALS.get(self.path.split("?")[0])
            if signal_name is None:
                return self.answer(404, "no such OTLP endpoint (/v1/traces, /v1/logs)", close=True)
            if not collector.authorized(self.headers.get("Authorization")):
                return self.answer(401, "missing or wrong token (Authorization: Bearer TOKEN)", close=True)
            if self.headers.get("Transfer-Encoding"):
                return self.answer(411, "a body with a Content-Length is required (not Transfer-Encoding)", close=True)
            lengths = self.headers.get_all("Content-Length") or []
            if not lengths:
                return self.answer(411, "a Content-Length is required", close=True)
            # digits only: int() takes "-1" (read to the end of the stream, past any cap), "+5", " 5 ", "1_0"
            if len(set(lengths)) != 1 or not _DIGITS.fullmatch(lengths[0]):
                return self.answer(400, f"invalid Content-Length {', '.join(lengths)[:40]!r} (a number of bytes)",
                                   close=True)
            length = int(lengths[0])
            if length > collector.max_body:
                return self.answer(413, f"body over {collector.max_body} bytes", close=True)
            content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            if content_type not in ("application/json", "application/x-protobuf"):
                return self.answer(415, "expected application/x-protobuf or application/json", close=True)
            with tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY) as spool:
                remaining = length
                while remaining:
                    chunk = self.rfile.read(min(CHUNK, remaining))
                    if not chunk:  # the client went away: nothing to answer
                        self.close_connection = True
                        return None
                    spool.write(chunk)
                    remaining -= len(chunk)
                with collector.one_at_a_time:
                    spool.seek(0)
                    status, message = self.store(spool.read(), content_type, signal_name)
            self.answer(status, message, content_type)

        def store(self, body: bytes, content_type: str, signal_name: str) -> tuple[int, str | None]:
            try:
                body = self.decode(body)
                if content_type == "application/json":
                    request = json.loads(body)
                else:
                    from ..otlp_in import protobuf_to_json

                    request = protobuf_to_json(body, signal_name)
                collector.store(request)
            except BodyTooLarge as exc:
                return 413, str(exc)
            except (InputError, ValueError, OSError) as exc:  # DecodeError is a ValueError... mostly
                return 400, str(exc).splitlines()[0]
            except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError, a malformed message
                return 400, f"{type(exc).__name__}: {exc}".splitlines()[0]
            return 200, None

        def decode(self, body: bytes) -> bytes:
            encoding = (self.headers.get("Content-Encoding") or "identity").lower()
            if encoding == "identity":
                return body
            if encoding != "gzip":
                raise ValueError(f"unsupported Content-Encoding {encoding[:40]!r} (gzip or none)")
            # bounded: a small gzip body must not become gigabytes in memory
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            try:
                out = inflater.decompress(body, collector.max_body + 1)
            except zlib.error as exc:
                raise ValueError(f"not a gzip body: {exc}") from None
            if len(out) > collector.max_body:
                raise BodyTooLarge(f"body over {collector.max_body} bytes once decompressed")
            if not inflater.eof:
                raise ValueError("the gzip body is cut short")
            return out

        def answer(self, status: int, message: str | None, content_type: str = "application/json", *,
                   close: bool = False) -> None:
            """``close``: the connection ends with this answer (its body, if any, was not read
            and must not be parsed as a request); so does every answer once the receiver is stopping."""
            if content_type == "application/x-protobuf" and status == 200:
                payload = b""  # an empty Export*ServiceResponse: everything accepted
            else:
                payload = json.dumps({} if message is None else {"message": message}).encode()
                content_type = "application/json"
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            if close or collector.stopping.is_set():
                self.send_header("Connection", "close")
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
        server = Server((host, port), make_handler(collector))
    except OSError as exc:
        collector.close()
        raise CLIError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    address = f"http://{host}:{server.server_port}"
    click.echo(f"evalyard collect on {address} (OTLP/HTTP /v1/traces, /v1/logs), writing {output}; "
               "Ctrl-C stops it")
    if not _loopback(host):
        where = "every network interface" if _unspecified(host) else f"{host}, reachable from the network"
        click.echo(f"warning: listening on {where}: anyone who can reach this port and has the token can "
                   f"write to {output}; --host 127.0.0.1 keeps it on this machine", err=True)
    if generated:
        click.echo(f"token: {token}")
    click.echo(f"  OTEL_EXPORTER_OTLP_ENDPOINT={address} "
               f"OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20{token if generated else 'TOKEN'}")
    try:
        while not stop.wait(0.5):
            pass
    finally:
        collector.stopping.set()  # idle connections close, busy ones after their answer
        server.shutdown()
        server.server_close()
        collector.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    click.echo(f"stopped: {collector.requests} request(s) stored, {collector.spans} GenAI spans and "
               f"{collector.events} events in {output}")


def _address(host: str):
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _loopback(host: str) -> bool:
    address = _address(host)
    return host == "localhost" or (address is not None and address.is_loopback)


def _unspecified(host: str) -> bool:
    address = _address(host)
    return host == "" or (address is not None and address.is_unspecified)


def register(cli: click.Group) -> None:
    cli.add_command(collect)
