"""A fake OpenAI-compatible chat-completions server for tests and benchmarks.

``python -m evalyard.testing.fake_openai --port P --latency-ms 100 --fault-rate 0.3
--faults 429,500,timeout,malformed`` listens on 127.0.0.1 and answers
``POST /v1/chat/completions`` like an OpenAI model would: a short answer, ``usage``,
and first-token ``logprobs`` when asked. It is reached through litellm's ordinary
``openai/`` provider with ``api_base=http://127.0.0.1:P/v1``.

Answers and faults are deterministic for a seed: whether a request fails depends on
the seed, the request body and how many times that same body was seen before, not on
the order in which concurrent requests arrive. So a retried request eventually gets
through, and two runs with the same seed inject the same faults.

Built on the standard library's asyncio streams (HTTP/1.1 with keep-alive), so it
needs nothing installed and starts in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

FAULT_KINDS = ("429", "500", "503", "timeout", "malformed")


@dataclass
class FakeServerConfig:
    latency_ms: float = 0.0
    fault_rate: float = 0.0
    faults: tuple[str, ...] = ("429", "500")
    seed: int = 0
    #: Seconds sent in ``Retry-After`` with a 429.
    retry_after: float | None = 0.0
    #: How long a "timeout" fault holds the request before giving up on it.
    hang_s: float = 30.0
    #: Fixed reply text; None answers "yes" or "no" depending on the prompt and seed.
    reply: str | None = None


@dataclass
class FakeServerStats:
    requests: int = 0
    faults: Counter = field(default_factory=Counter)
    answered: int = 0


def _unit(*parts: Any) -> float:
    """A deterministic number in [0, 1) from the parts."""
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _example_for(schema: dict[str, Any], seed_unit: float) -> Any:
    """A small value that satisfies a JSON schema (enough of JSON Schema for judge answers)."""
    if "enum" in schema:
        options = schema["enum"]
        return options[int(seed_unit * len(options))]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: _example_for(v, _unit(seed_unit, k)) for k, v in props.items()}
    if kind == "array":
        return [_example_for(schema.get("items", {}), seed_unit)]
    if kind == "boolean":
        return seed_unit < 0.5
    if kind in ("integer", "number"):
        low = schema.get("minimum", 0)
        high = schema.get("maximum", low + 10)
        value = low + seed_unit * (high - low)
        return int(round(value)) if kind == "integer" else round(value, 3)
    if kind == "null":
        return None
    return "ok"


class FakeOpenAI:
    """The request handling, independent of how the server is started."""

    def __init__(self, config: FakeServerConfig | None = None) -> None:
        self.config = config or FakeServerConfig()
        self.stats = FakeServerStats()
        self._seen: Counter = Counter()

    # -- HTTP --------------------------------------------------------------
    async def handle_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request_line = await reader.readline()
                if not request_line:
                    break
                method, path, _ = request_line.decode("latin-1").split(" ", 2)
                headers = {}
                while True:
                    line = await reader.readline()
                    if line in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = line.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = b""
                length = int(headers.get("content-length", "0") or 0)
                if length:
                    body = await reader.readexactly(length)
                status, extra_headers, payload = await self.respond(method, path, body)
                if status == 0:  # the "timeout" fault: never answer, drop the connection
                    break
                head = [f"HTTP/1.1 {status} {_REASONS.get(status, 'OK')}",
                        "Content-Type: application/json",
                        f"Content-Length: {len(payload)}"]
                head += [f"{k}: {v}" for k, v in extra_headers.items()]
                writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        except asyncio.CancelledError:
            # The server is stopping; ending quietly keeps asyncio from logging the cancel.
            pass
        finally:
            writer.close()

    async def respond(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        path = path.split("?", 1)[0].rstrip("/")
        if method == "GET" and path.endswith("/models"):
            return 200, {}, json.dumps({"object": "list", "data": [{"id": "fake", "object": "model"}]}).encode()
        if method != "POST" or not path.endswith("/chat/completions"):
            return 404, {}, json.dumps({"error": {"message": f"no route {method} {path}"}}).encode()
        try:
            request = json.loads(body)
        except json.JSONDecodeError:
            return 400, {}, json.dumps({"error": {"message": "body is not JSON"}}).encode()
        self.stats.requests += 1
        fault = self.pick_fault(body)
        if self.config.latency_ms:
            await asyncio.sleep(self.config.latency_ms / 1000)
        if fault is not None:
            self.stats.faults[fault] += 1
            return await self.fault_response(fault)
        self.stats.answered += 1
        return 200, {}, json.dumps(self.completion(request)).encode()

    def pick_fault(self, body: bytes) -> str | None:
        config = self.config
        if not config.fault_rate or not config.faults:
            return None
        digest = hashlib.sha256(body).hexdigest()
        attempt = self._seen[digest]
        self._seen[digest] += 1
        if _unit(config.seed, digest, attempt, "fault") >= config.fault_rate:
            return None
        return config.faults[int(_unit(config.seed, digest, attempt, "kind") * len(config.faults))]

    async def fault_response(self, fault: str) -> tuple[int, dict[str, str], bytes]:
        if fault == "timeout":
            await asyncio.sleep(self.config.hang_s)
            return 0, {}, b""
        if fault == "malformed":
            return 200, {}, b'{"id": "chatcmpl-broken", "choices": [{"message": '
        status = int(fault)
        headers = {}
        if status == 429 and self.config.retry_after is not None:
            headers["Retry-After"] = f"{self.config.retry_after:g}"
        message = {429: "rate limit reached (injected)", 500: "server error (injected)",
                   503: "overloaded (injected)"}.get(status, "injected fault")
        kind = "rate_limit_error" if status == 429 else "server_error"
        return status, headers, json.dumps({"error": {"message": message, "type": kind}}).encode()

    # -- the model ---------------------------------------------------------
    def completion(self, request: dict[str, Any]) -> dict[str, Any]:
        messages = request.get("messages") or []
        prompt = "\n".join(str(m.get("content", "")) for m in messages)
        u = _unit(self.config.seed, prompt)
        response_format = request.get("response_format") or {}
        schema = (response_format.get("json_schema") or {}).get("schema")
        if schema:
            content = json.dumps(_example_for(schema, u))
        elif response_format.get("type") == "json_object":
            content = json.dumps({"answer": "yes" if u < 0.5 else "no"})
        elif self.config.reply is not None:
            content = self.config.reply
        else:
            content = "yes" if u < 0.5 else "no"
        choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": content},
                                  "finish_reason": "stop"}
        if request.get("logprobs"):
            choice["logprobs"] = {"content": self.token_logprobs(content, u, int(request.get("top_logprobs") or 0))}
        prompt_tokens = max(1, len(prompt.split()))
        completion_tokens = max(1, len(content.split()))
        return {
            "id": f"chatcmpl-fake-{hashlib.sha256(prompt.encode()).hexdigest()[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", "fake"),
            "choices": [choice],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }

    @staticmethod
    def token_logprobs(content: str, u: float, top: int) -> list[dict[str, Any]]:
        """First-token logprobs: the answer token most likely, its opposite next, with case variants."""
        words = content.split() or [content]
        first = words[0]
        p_first = 0.6 + 0.39 * u
        alternatives = {"yes": "no", "no": "yes"}
        other = alternatives.get(first.lower(), "no")
        tops = [(first, p_first), (other, (1 - p_first) * 0.8), (first.upper(), (1 - p_first) * 0.15),
                (" " + other, (1 - p_first) * 0.05)]
        entries = [{"token": t, "logprob": math.log(p), "bytes": None} for t, p in tops[: max(top, 1)]]
        out = [{"token": first, "logprob": math.log(p_first), "bytes": None, "top_logprobs": entries if top else []}]
        for word in words[1:]:
            token = " " + word
            out.append({"token": token, "logprob": 0.0, "bytes": None,
                        "top_logprobs": [{"token": token, "logprob": 0.0, "bytes": None}] if top else []})
        return out


_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests",
            500: "Internal Server Error", 503: "Service Unavailable"}


class FakeOpenAIServer:
    """The server on a background thread with its own event loop (for tests and benchmarks).

    Use as a context manager; ``base_url`` is what litellm wants as ``api_base``.
    """

    def __init__(self, config: FakeServerConfig | None = None, port: int = 0) -> None:
        self.app = FakeOpenAI(config)
        self.port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def stats(self) -> FakeServerStats:
        return self.app.stats

    def start(self) -> "FakeOpenAIServer":
        self._thread = threading.Thread(target=self._serve, name="fake-openai", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        return self

    def _serve(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self.app.handle_connection, "127.0.0.1", self.port, backlog=256))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        self._server.close()
        self._loop.run_until_complete(self._server.wait_closed())
        tasks = asyncio.all_tasks(self._loop)
        for task in tasks:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        self._loop.close()

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def parse_faults(text: str) -> tuple[str, ...]:
    faults = tuple(f.strip() for f in text.split(",") if f.strip())
    unknown = [f for f in faults if f not in FAULT_KINDS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown fault {unknown[0]!r} (known: {', '.join(FAULT_KINDS)})")
    return faults


async def serve(config: FakeServerConfig, port: int) -> None:
    app = FakeOpenAI(config)
    server = await asyncio.start_server(app.handle_connection, "127.0.0.1", port, backlog=256)
    bound = server.sockets[0].getsockname()[1]
    # One line on stdout so a parent process started with --port 0 can read the port.
    print(f"fake OpenAI server listening on http://127.0.0.1:{bound}/v1", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m evalyard.testing.fake_openai",
                                     description="A fake OpenAI-compatible chat-completions server on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=0, help="port (0: pick a free one and print it)")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="delay before every answer")
    parser.add_argument("--fault-rate", type=float, default=0.0, help="share of requests that fail (0..1)")
    parser.add_argument("--faults", type=parse_faults, default=("429", "500"),
                        help=f"comma-separated fault kinds: {','.join(FAULT_KINDS)}")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--retry-after", type=float, default=0.0, help="Retry-After seconds sent with a 429")
    parser.add_argument("--hang-s", type=float, default=30.0, help="how long a timeout fault holds a request")
    parser.add_argument("--reply", default=None, help="fixed reply text (default: yes or no by prompt)")
    args = parser.parse_args(argv)
    config = FakeServerConfig(latency_ms=args.latency_ms, fault_rate=args.fault_rate, faults=args.faults,
                              seed=args.seed, retry_after=args.retry_after, hang_s=args.hang_s, reply=args.reply)
    try:
        asyncio.run(serve(config, args.port))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
