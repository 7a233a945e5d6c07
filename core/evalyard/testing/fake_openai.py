"""A fake OpenAI-compatible chat-completions server for tests and benchmarks.

``python -m evalyard.testing.fake_openai --port P --latency-ms 100 --fault-rate 0.3
--faults 429,500,timeout,malformed`` listens on 127.0.0.1 and answers
``POST /v1/chat/completions`` like an OpenAI model would: a short answer, ``usage``,
and first-token ``logprobs`` when asked. ``POST /v1/embeddings`` gives each text a
deterministic vector: its words counted into ``EMBEDDING_DIMENSIONS`` hashed dimensions, so
texts sharing words are similar, and whole numbers, exact in float32 (``encoding_format:
base64`` as the OpenAI client asks) and in JSON alike. It is reached through litellm's ordinary
``openai/`` provider with ``api_base=http://127.0.0.1:P/v1``.

It also serves the Batch API (``POST /v1/files``, ``GET /v1/files/ID/content``,
``POST|GET /v1/batches``, ``GET /v1/batches/ID``): a batch is answered with the same replies
as online calls, ``--batch-delay-s`` after it was created; ``--batch-fail-rate`` fails a
deterministic share of its requests (into the error file), and ``--batch-expire-after F``
lets a batch expire with only the first share F of its requests answered.

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
#: How long the fake embeddings are.
EMBEDDING_DIMENSIONS = 64


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
    #: Batch API: seconds from creation until a batch is done.
    batch_delay_s: float = 0.0
    #: Share of a batch's requests that fail (deterministic per request and attempt).
    batch_fail_rate: float = 0.0
    #: When set, a batch expires with only this share of its requests answered.
    batch_expire_after: float | None = None
    #: Prompt cache as OpenAI's: a prompt's longest word prefix shared with an earlier prompt counts as
    #: cached tokens (``usage.prompt_tokens_details.cached_tokens``) from this many on, in steps of 128.
    prompt_cache_min: int = 1024
    #: A scripted model's rules file (``evalyard.testing.scripted``): the first rule whose
    #: ``contains`` / ``regex`` match the prompt (its messages' contents joined by blank lines)
    #: gives the reply, over HTTP, so another program's client gets the very answers evalyard's
    #: judge gets (a parity test); a prompt no rule matches is a 400 naming it.
    rules: str | None = None
    #: Keep every chat request's parsed body in ``stats.bodies`` (tests that check what was sent).
    record: bool = False
    #: Replies that change when the same prompt is asked again (a judge that answers on a retry):
    #: a rule's reply that is a key here is replaced, the nth time one prompt gets it, by the nth
    #: text of its list (the last one from then on). Counted per prompt, so two programs asking
    #: in their own words each see the sequence from its start.
    sequences: dict[str, list[str]] | None = None


@dataclass
class FakeServerStats:
    requests: int = 0
    bodies: list = field(default_factory=list)
    faults: Counter = field(default_factory=Counter)
    answered: int = 0
    #: Batch API: batches created, and how many times each request (by custom_id) was submitted.
    batches: int = 0
    batch_submissions: Counter = field(default_factory=Counter)
    batch_answered: int = 0
    batch_failed: int = 0
    #: ``POST /v1/embeddings`` requests, and the texts they held (chat requests are ``requests``)
    embedding_requests: int = 0
    embedded: list = field(default_factory=list)


@dataclass
class _Batch:
    id: str
    input_file_id: str
    endpoint: str
    created_at: float
    metadata: dict[str, Any] | None = None
    status: str = "validating"
    output_file_id: str | None = None
    error_file_id: str | None = None
    counts: dict[str, int] = field(default_factory=lambda: {"total": 0, "completed": 0, "failed": 0})
    finished_at: float | None = None


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
        self.files: dict[str, tuple[str, bytes]] = {}  # id -> (filename, content)
        self._prompts: list[list[str]] = []  # earlier prompts' words, for the prompt cache
        self.batches: dict[str, _Batch] = {}
        self._rules: list[Any] | None = None
        self._sequence_seen: Counter = Counter()

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
                status, extra_headers, payload = await self.respond(method, path, body, headers)
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

    async def respond(self, method: str, path: str, body: bytes,
                      headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        path = path.split("?", 1)[0].rstrip("/")
        if method == "GET" and path.endswith("/models"):
            return 200, {}, json.dumps({"object": "list", "data": [{"id": "fake", "object": "model"}]}).encode()
        if "/files" in path or "/batches" in path:
            return self.batch_api(method, path, body, headers or {})
        if method == "POST" and path.endswith("/embeddings"):
            return self.embeddings(body)
        if method != "POST" or not path.endswith("/chat/completions"):
            return 404, {}, json.dumps({"error": {"message": f"no route {method} {path}"}}).encode()
        try:
            request = json.loads(body)
        except json.JSONDecodeError:
            return 400, {}, json.dumps({"error": {"message": "body is not JSON"}}).encode()
        self.stats.requests += 1
        if self.config.record:
            self.stats.bodies.append(request)
        fault = self.pick_fault(body)
        if self.config.latency_ms:
            await asyncio.sleep(self.config.latency_ms / 1000)
        if fault is not None:
            self.stats.faults[fault] += 1
            return await self.fault_response(fault)
        reply = None
        if self.config.rules is not None:
            reply = self.scripted_reply(request)
            if reply is None:
                prompt = _prompt_text(request)
                return 400, {}, json.dumps({"error": {"message": f"no rule matches the prompt: {prompt[:300]}"}}).encode()
        self.stats.answered += 1
        return 200, {}, json.dumps(self.completion(request, reply)).encode()

    def embeddings(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
        try:
            request = json.loads(body)
        except json.JSONDecodeError:
            return 400, {}, json.dumps({"error": {"message": "body is not JSON"}}).encode()
        texts = request.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return 400, {}, json.dumps({"error": {"message": "input must be a text or a list of texts (not tokens)",
                                                  "type": "invalid_request_error"}}).encode()
        self.stats.embedding_requests += 1
        self.stats.embedded.extend(texts)
        base64 = request.get("encoding_format") == "base64"
        data = [{"object": "embedding", "index": n, "embedding": _embedding(text, base64)} for n, text in enumerate(texts)]
        tokens = sum(max(1, len(t.split())) for t in texts)
        return 200, {}, json.dumps({"object": "list", "data": data, "model": request.get("model", "fake"),
                                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}).encode()

    def scripted_reply(self, request: dict[str, Any]) -> str | None:
        from .scripted import load_rules

        if self._rules is None:
            self._rules = load_rules(self.config.rules)
        prompt = _prompt_text(request)
        rule = next((r for r in self._rules if r.matches(prompt, None)), None)
        if rule is None:
            return None
        sequence = (self.config.sequences or {}).get(rule.content)
        if not sequence:
            return rule.content
        key = (prompt, rule.content)
        seen = self._sequence_seen[key]
        self._sequence_seen[key] += 1
        return sequence[min(seen, len(sequence) - 1)]

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

    # -- the Batch API -----------------------------------------------------
    def batch_api(self, method: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict, bytes]:
        parts = path.split("/")
        tail = parts[parts.index("files" if "/files" in path else "batches"):]
        if tail == ["files"] and method == "POST":
            return self._ok(self.upload(body, headers.get("content-type", "")))
        if tail[0] == "files" and len(tail) == 3 and tail[2] == "content" and method == "GET":
            found = self.files.get(tail[1])
            return (200, {}, found[1]) if found else _not_found(f"no file {tail[1]}")
        if tail[0] == "files" and len(tail) == 2 and method == "GET":
            found = self.files.get(tail[1])
            return self._ok(self._file_object(tail[1])) if found else _not_found(f"no file {tail[1]}")
        if tail == ["batches"] and method == "POST":
            request = json.loads(body or b"{}")
            if request.get("input_file_id") not in self.files:
                return _not_found(f"no file {request.get('input_file_id')}")
            return self._ok(self.create_batch(request))
        if tail == ["batches"] and method == "GET":
            data = [self._batch_object(b) for b in reversed(list(self.batches.values()))]
            return self._ok({"object": "list", "data": data, "has_more": False,
                             "first_id": data[0]["id"] if data else None, "last_id": data[-1]["id"] if data else None})
        if tail[0] == "batches" and len(tail) == 2 and method == "GET":
            batch = self.batches.get(tail[1])
            return self._ok(self._batch_object(self.advance(batch))) if batch else _not_found(f"no batch {tail[1]}")
        if tail[0] == "batches" and len(tail) == 3 and tail[2] == "cancel" and method == "POST":
            batch = self.batches.get(tail[1])
            if batch is None:
                return _not_found(f"no batch {tail[1]}")
            if batch.status in ("validating", "in_progress"):
                batch.status, batch.finished_at = "cancelled", time.time()
            return self._ok(self._batch_object(batch))
        return _not_found(f"no route {method} {path}")

    @staticmethod
    def _ok(data: dict[str, Any]) -> tuple[int, dict, bytes]:
        return 200, {}, json.dumps(data).encode()

    def upload(self, body: bytes, content_type: str) -> dict[str, Any]:
        """A multipart/form-data upload (fields ``purpose`` and ``file``)."""
        boundary = content_type.partition("boundary=")[2].strip('"').encode()
        filename, content = "upload.jsonl", b""
        for part in body.split(b"--" + boundary):
            head, _, data = part.partition(b"\r\n\r\n")
            if b'name="file"' in head:
                content = data[:-2] if data.endswith(b"\r\n") else data
                if b'filename="' in head:
                    filename = head.split(b'filename="', 1)[1].split(b'"', 1)[0].decode()
        file_id = f"file-fake{len(self.files) + 1:06d}"
        self.files[file_id] = (filename, content)
        return self._file_object(file_id)

    def _file_object(self, file_id: str) -> dict[str, Any]:
        filename, content = self.files[file_id]
        return {"id": file_id, "object": "file", "bytes": len(content), "created_at": int(time.time()),
                "filename": filename, "purpose": "batch", "status": "processed"}

    def create_batch(self, request: dict[str, Any]) -> dict[str, Any]:
        batch = _Batch(id=f"batch_fake{len(self.batches) + 1:06d}", input_file_id=request["input_file_id"],
                       endpoint=request.get("endpoint", "/v1/chat/completions"), created_at=time.time(),
                       metadata=request.get("metadata"))
        lines = [json.loads(line) for line in self.files[batch.input_file_id][1].splitlines() if line.strip()]
        batch.counts["total"] = len(lines)
        self.stats.batches += 1
        for line in lines:
            self.stats.batch_submissions[line.get("custom_id")] += 1
        self.batches[batch.id] = batch
        return self._batch_object(batch)

    def advance(self, batch: _Batch) -> _Batch:
        """Move a batch along by the clock: in progress until its delay has passed, then done."""
        if batch.status in ("completed", "failed", "expired", "cancelled"):
            return batch
        if time.time() - batch.created_at < self.config.batch_delay_s:
            batch.status = "in_progress"
            return batch
        lines = [json.loads(line) for line in self.files[batch.input_file_id][1].splitlines() if line.strip()]
        share = self.config.batch_expire_after
        cut = len(lines) if share is None else math.ceil(len(lines) * share)
        outputs, errors = [], []
        for n, line in enumerate(lines):
            custom_id = line.get("custom_id")
            request_id = f"req_{hashlib.sha256(f'{batch.id}{custom_id}'.encode()).hexdigest()[:16]}"
            if n >= cut:
                errors.append({"id": request_id, "custom_id": custom_id, "response": None,
                               "error": {"code": "batch_expired", "message": "the batch expired before this request "
                                                                             "was processed"}})
                continue
            attempt = self.stats.batch_submissions[custom_id]
            if _unit(self.config.seed, custom_id, attempt, "batch-fault") < self.config.batch_fail_rate:
                errors.append({"id": request_id, "custom_id": custom_id, "error": None,
                               "response": {"status_code": 500, "request_id": request_id,
                                            "body": {"error": {"message": "server error (injected)",
                                                               "type": "server_error"}}}})
                continue
            outputs.append({"id": request_id, "custom_id": custom_id, "error": None,
                            "response": {"status_code": 200, "request_id": request_id,
                                         "body": self.completion(line.get("body") or {})}})
        self.stats.batch_answered += len(outputs)
        self.stats.batch_failed += len(errors)
        if outputs:
            batch.output_file_id = self._store_lines(f"{batch.id}_output.jsonl", outputs)
        if errors:
            batch.error_file_id = self._store_lines(f"{batch.id}_errors.jsonl", errors)
        batch.counts.update(completed=len(outputs), failed=len(errors))
        batch.status = "expired" if cut < len(lines) else "completed"
        batch.finished_at = time.time()
        return batch

    def _store_lines(self, filename: str, rows: list[dict[str, Any]]) -> str:
        file_id = f"file-fake{len(self.files) + 1:06d}"
        self.files[file_id] = (filename, "".join(json.dumps(r) + "\n" for r in rows).encode())
        return file_id

    @staticmethod
    def _batch_object(batch: _Batch) -> dict[str, Any]:
        created = int(batch.created_at)
        done = int(batch.finished_at) if batch.finished_at else None
        return {"id": batch.id, "object": "batch", "endpoint": batch.endpoint, "errors": None,
                "input_file_id": batch.input_file_id, "completion_window": "24h", "status": batch.status,
                "output_file_id": batch.output_file_id, "error_file_id": batch.error_file_id,
                "created_at": created, "in_progress_at": created, "expires_at": created + 86400,
                "finalizing_at": done, "completed_at": done if batch.status == "completed" else None,
                "failed_at": None, "expired_at": done if batch.status == "expired" else None,
                "cancelling_at": None, "cancelled_at": done if batch.status == "cancelled" else None,
                "request_counts": dict(batch.counts), "metadata": batch.metadata}

    # -- the model ---------------------------------------------------------
    def completion(self, request: dict[str, Any], reply: str | None = None) -> dict[str, Any]:
        messages = request.get("messages") or []
        prompt = "\n".join(str(m.get("content", "")) for m in messages)
        u = _unit(self.config.seed, prompt)
        response_format = request.get("response_format") or {}
        schema = (response_format.get("json_schema") or {}).get("schema")
        if reply is not None:
            content = reply
        elif schema:
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
        # ``n`` completions: the same reply n times (a deterministic model), as one request
        choices = [{**choice, "index": index} for index in range(max(1, int(request.get("n") or 1)))]
        prompt_tokens = max(1, len(prompt.split()))
        completion_tokens = max(1, len(content.split()))
        cached = self.cached_tokens(prompt.split())
        return {
            "id": f"chatcmpl-fake-{hashlib.sha256(prompt.encode()).hexdigest()[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", "fake"),
            "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens * len(choices),
                      "total_tokens": prompt_tokens + completion_tokens * len(choices),
                      "prompt_tokens_details": {"cached_tokens": cached}},
        }

    def cached_tokens(self, words: list[str]) -> int:
        shared = 0
        for earlier in self._prompts:
            n = 0
            for a, b in zip(earlier, words):
                if a != b:
                    break
                n += 1
            shared = max(shared, n)
        self._prompts = (self._prompts + [words])[-64:]
        minimum = self.config.prompt_cache_min
        if shared < minimum:
            return 0
        return shared if minimum <= 1 else shared - shared % 128

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


def embedding_of(text: str) -> list[float]:
    """A text's fake embedding: how often its lower-cased words fall in each hashed dimension (a
    text without words is the zero vector, as a model's never is: a cosine of it is undefined)."""
    import re

    vector = [0.0] * EMBEDDING_DIMENSIONS
    for word in re.findall(r"\w+", text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % EMBEDDING_DIMENSIONS] += 1.0
    return vector


def _embedding(text: str, base64: bool) -> Any:
    vector = embedding_of(text)
    if not base64:
        return vector
    import base64 as b64
    import struct

    return b64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()


def _prompt_text(request: dict[str, Any]) -> str:
    """A request's prompt as the scripted model's rules see it: the contents joined by blank lines."""
    from .scripted import prompt_text

    return prompt_text(request.get("messages") or [])


def _not_found(message: str) -> tuple[int, dict, bytes]:
    return 404, {}, json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()


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
        asyncio.set_event_loop(self._loop)  # so the shutdown below can gather connections left open
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


def submitted_batches(base_url: str) -> tuple[int, list[str]]:
    """How many batches a running server (this one or any Batch API) holds, and the custom_id of
    every request submitted in them, read back through the API itself (for tests and benchmarks)."""
    import urllib.request

    with urllib.request.urlopen(f"{base_url}/batches") as response:
        batches = json.load(response)["data"]
    ids = []
    for batch in batches:
        with urllib.request.urlopen(f"{base_url}/files/{batch['input_file_id']}/content") as response:
            ids += [json.loads(line)["custom_id"] for line in response.read().decode().splitlines() if line]
    return len(batches), ids


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
    parser.add_argument("--rules", default=None, help="reply by a scripted model's rules file (YAML or JSONL)")
    parser.add_argument("--batch-delay-s", type=float, default=0.0, help="Batch API: seconds until a batch is done")
    parser.add_argument("--batch-fail-rate", type=float, default=0.0,
                        help="Batch API: share of a batch's requests that fail (0..1)")
    parser.add_argument("--batch-expire-after", type=float, default=None,
                        help="Batch API: batches expire with only this share (0..1) of their requests answered")
    args = parser.parse_args(argv)
    config = FakeServerConfig(latency_ms=args.latency_ms, fault_rate=args.fault_rate, faults=args.faults,
                              seed=args.seed, retry_after=args.retry_after, hang_s=args.hang_s, reply=args.reply,
                              batch_delay_s=args.batch_delay_s, batch_fail_rate=args.batch_fail_rate,
                              batch_expire_after=args.batch_expire_after, rules=args.rules)
    try:
        asyncio.run(serve(config, args.port))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
