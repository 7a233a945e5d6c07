"""Token and cost accounting for a run, and the ``max_cost`` stop.

Spent cost counts fresh calls only; a cache hit's original cost is kept apart as
``cached_cost`` (what the cache saved). A call whose price is unknown adds its tokens
but no cost, and is counted in ``unknown_cost_calls``: a total is then a lower
bound, and reports say so instead of printing $0.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from .errors import CostLimitReached
from .records import Completion


@dataclass
class UsageMeter:
    max_cost: float | None = None
    calls: int = 0
    cache_hits: int = 0
    requests: int = 0
    retries: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    cost: float = 0.0
    cached_cost: float = 0.0
    unknown_cost_calls: int = 0
    by_model: dict[str, dict[str, Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def check(self) -> None:
        """Raise :class:`CostLimitReached` once spending has reached ``max_cost``."""
        if self.max_cost is not None and self.cost >= self.max_cost:
            raise CostLimitReached(self.cost, self.max_cost)

    def record(self, completion: Completion) -> None:
        usage = completion.usage
        with self._lock:
            self.calls += 1
            model = self.by_model.setdefault(completion.model, {"calls": 0, "cache_hits": 0, "prompt_tokens": 0,
                                                                "completion_tokens": 0, "cached_prompt_tokens": 0,
                                                                "cost": 0.0, "unknown_cost_calls": 0})
            model["calls"] += 1
            self.prompt_tokens += usage.prompt_tokens or 0
            self.completion_tokens += usage.completion_tokens or 0
            model["prompt_tokens"] += usage.prompt_tokens or 0
            model["completion_tokens"] += usage.completion_tokens or 0
            if not completion.cached:
                self.cached_prompt_tokens += usage.cached_prompt_tokens or 0
                model["cached_prompt_tokens"] += usage.cached_prompt_tokens or 0
            if completion.cached:
                self.cache_hits += 1
                model["cache_hits"] += 1
                if usage.cost is not None:
                    self.cached_cost += usage.cost
                return
            if usage.cost is None:
                self.unknown_cost_calls += 1
                model["unknown_cost_calls"] += 1
            else:
                self.cost += usage.cost
                model["cost"] += usage.cost

    def record_attempts(self, requests: int, retries: int) -> None:
        with self._lock:
            self.requests += requests
            self.retries += retries

    def record_error(self) -> None:
        with self._lock:
            self.errors += 1

    def to_dict(self) -> dict[str, Any]:
        """The run's usage; ``cost`` is None when no fresh call had a known price."""
        fresh = self.calls - self.cache_hits
        priced = fresh - self.unknown_cost_calls
        return {
            "calls": self.calls, "cache_hits": self.cache_hits, "requests": self.requests,
            "retries": self.retries, "errors": self.errors,
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "cached_prompt_tokens": self.cached_prompt_tokens,
            "cost": self.cost if priced > 0 or fresh == 0 else None,
            "cost_complete": self.unknown_cost_calls == 0,
            "unknown_cost_calls": self.unknown_cost_calls, "cached_cost": self.cached_cost,
            "max_cost": self.max_cost, "by_model": {k: dict(v) for k, v in self.by_model.items()},
        }


def format_cost(cost: float | None, complete: bool = True) -> str:
    """``$0.0123``, ``unknown``, or ``>= $0.0123`` when some prices were unknown."""
    if cost is None:
        return "unknown"
    return f"${cost:.4f}" if complete else f">= ${cost:.4f}"


def format_latency(ms: float | None) -> str:
    """``840 ms``, ``2.3 s``, or ``unknown`` (no call recorded a latency)."""
    if ms is None:
        return "unknown"
    return f"{ms:,.0f} ms" if ms < 1000 else f"{ms / 1000:,.1f} s"


@dataclass(frozen=True)
class Usage:
    """The model usage of one result (the calls a scorer or generator made for one case).

    Values add up with ``+`` (``sum(usages, Usage())`` works), whatever step or sample made
    them: counts and tokens add, ``cost`` is the sum of the known prices (None when no call
    had one) and ``cost_complete`` says whether every call had a price.
    """

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    cost_complete: bool = True
    models: tuple[str, ...] = ()
    cached_prompt_tokens: int = 0

    @classmethod
    def of(cls, completions: list[Completion]) -> "Usage":
        known = [c.usage.cost for c in completions if c.usage.cost is not None]
        return cls(calls=len(completions), cache_hits=sum(1 for c in completions if c.cached),
                   retries=sum(max(0, c.attempts - 1) for c in completions),
                   prompt_tokens=sum(c.usage.prompt_tokens or 0 for c in completions),
                   completion_tokens=sum(c.usage.completion_tokens or 0 for c in completions),
                   cost=sum(known) if known else None, cost_complete=len(known) == len(completions),
                   models=tuple(sorted({c.model for c in completions})),
                   cached_prompt_tokens=sum(c.usage.cached_prompt_tokens or 0 for c in completions if not c.cached))

    @classmethod
    def from_dict(cls, data: "dict[str, Any] | Usage | None") -> "Usage":
        if isinstance(data, Usage):
            return data
        data = data or {}
        return cls(calls=data.get("calls") or 0, cache_hits=data.get("cache_hits") or 0,
                   retries=data.get("retries") or 0, prompt_tokens=data.get("prompt_tokens") or 0,
                   completion_tokens=data.get("completion_tokens") or 0, cost=data.get("cost"),
                   cost_complete=data.get("cost_complete", True), models=tuple(data.get("models") or ()),
                   cached_prompt_tokens=data.get("cached_prompt_tokens") or 0)

    def __add__(self, other: "Usage | dict[str, Any] | None") -> "Usage":
        other = Usage.from_dict(other)
        costs = [c for c in (self.cost, other.cost) if c is not None]
        return Usage(calls=self.calls + other.calls, cache_hits=self.cache_hits + other.cache_hits,
                     retries=self.retries + other.retries, prompt_tokens=self.prompt_tokens + other.prompt_tokens,
                     completion_tokens=self.completion_tokens + other.completion_tokens,
                     cost=sum(costs) if costs else None,
                     cost_complete=self.cost_complete and other.cost_complete,
                     models=tuple(sorted(set(self.models) | set(other.models))),
                     cached_prompt_tokens=self.cached_prompt_tokens + other.cached_prompt_tokens)

    __radd__ = __add__

    def to_dict(self) -> dict[str, Any] | None:
        """What a Score's ``usage`` holds; None when no call was made."""
        if not self.calls:
            return None
        return {"calls": self.calls, "cache_hits": self.cache_hits, "retries": self.retries,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "cached_prompt_tokens": self.cached_prompt_tokens, "cost": self.cost,
                "cost_complete": self.cost_complete, "models": list(self.models)}

