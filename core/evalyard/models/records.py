"""What one model call returns, and what the cache keeps of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any


@dataclass
class CallUsage:
    """Tokens and cost of one call. ``cost`` is None when the price is unknown (never a stand-in 0).
    ``cached_prompt_tokens``: the prompt tokens the provider served from its prompt cache (None
    when it did not say), already priced at its cached-input rate in ``cost``."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    cached_prompt_tokens: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens, "cost": self.cost,
                "cached_prompt_tokens": self.cached_prompt_tokens}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "CallUsage":
        data = data or {}
        return cls(data.get("prompt_tokens"), data.get("completion_tokens"), data.get("cost"),
                   data.get("cached_prompt_tokens"))


@dataclass
class CallRecord:
    """A successful call as the cache stores it: request (the key's inputs), answer, usage, latency."""

    model: str
    request: dict[str, Any]
    response: dict[str, Any]
    usage: dict[str, Any] | None = None
    latency_ms: float | None = None
    created_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))


@dataclass
class Completion:
    """The answer to one call, fresh or from the cache.

    ``logprobs`` is one entry per answer token: ``{"token": str, "logprob": float,
    "top": {token: logprob}}``, or None when the provider returned none. ``tool_calls``: the
    functions the model asked to call (OpenAI's shape: ``{id, type, function: {name, arguments}}``,
    arguments as the JSON text the model wrote), or None when it asked for none.
    A cache hit keeps the original ``latency_ms`` and ``usage``; ``cached`` says it was one.
    """

    model: str
    text: str
    key: str
    usage: CallUsage = field(default_factory=CallUsage)
    latency_ms: float | None = None
    logprobs: list[dict[str, Any]] | None = None
    finish_reason: str | None = None
    cached: bool = False
    attempts: int = 1
    key_inputs: dict[str, Any] | None = None
    tool_calls: list[dict[str, Any]] | None = None

    def top_logprobs(self) -> list[dict[str, float]] | None:
        """The top-token maps of each answer position, the input ``p_yes`` wants."""
        if not self.logprobs:
            return None
        return [entry.get("top") or {entry["token"]: entry["logprob"]} for entry in self.logprobs]

    def to_response(self) -> dict[str, Any]:
        response = {"text": self.text, "logprobs": self.logprobs, "finish_reason": self.finish_reason}
        if self.tool_calls:  # only then: a text answer's cache record is as it always was
            response["tool_calls"] = self.tool_calls
        return response

    @classmethod
    def from_record(cls, key: str, record: CallRecord) -> "Completion":
        response = record.response or {}
        return cls(model=record.model, text=response.get("text") or "", key=key,
                   usage=CallUsage.from_dict(record.usage), latency_ms=record.latency_ms,
                   logprobs=response.get("logprobs"), finish_reason=response.get("finish_reason"),
                   cached=True, attempts=0, key_inputs=record.request, tool_calls=response.get("tool_calls"))


@dataclass
class PlannedRequest:
    """A call a run would make, rendered but not sent (``evalyard run --plan``): exactly what the
    model layer would send and hash into the response-cache key.

    ``params`` are the parameters as sent (model settings and logprobs applied); ``key`` is the
    cache key; ``output_tokens`` is how long the answer can be when the request bounds it (a
    P(yes) judge's one token), else None; ``answer`` names what is asked for (``binary``,
    ``text``, ``json``...), so a planner can tell similar calls apart in the history."""

    model: str
    messages: list[dict[str, Any]]
    params: dict[str, Any]
    sample: int = 0
    key: str = ""
    output_tokens: int | None = None
    answer: str = "text"
