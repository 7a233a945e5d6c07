"""Which failures are retried, and how long to wait before the next attempt.

Retried: 429, 408 and 5xx answers, timeouts, and connection errors (a reply that is
not valid JSON arrives from litellm as a 500, and is retried too). Not retried: the
other 4xx (bad request, auth, unknown model), which would only fail again.

The wait is exponential backoff with full jitter (``uniform(0, min(cap, base*2**n))``)
unless the provider sent ``Retry-After``, which is honoured (plus a little jitter so
that requests told the same time do not return at once).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from datetime import datetime, timezone
from typing import Any

#: Statuses that mean "the provider pushes back": the per-model limit is cut.
PUSHBACK_STATUSES = frozenset({429, 503, 529})


@dataclass
class RetryPolicy:
    max_attempts: int = 6
    base_delay: float = 0.5
    max_delay: float = 30.0
    #: A Retry-After longer than this is not waited for: the call fails instead.
    max_retry_after: float = 120.0

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if retry_after is not None:
            return retry_after + rng.uniform(0, min(1.0, 0.1 * retry_after + 0.05))
        return rng.uniform(0, min(self.max_delay, self.base_delay * 2 ** (attempt - 1)))


@dataclass
class FailureKind:
    status: int | None
    retryable: bool
    pushback: bool
    retry_after: float | None


def classify(exc: BaseException) -> FailureKind:
    """Sort a failure from litellm (or our own timeout) into retry / pushback / give up."""
    import asyncio

    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        status = None
    name = type(exc).__name__
    timeout = isinstance(exc, (asyncio.TimeoutError, TimeoutError)) or name in ("Timeout", "APITimeoutError")
    connection = name in ("APIConnectionError", "ConnectError", "ConnectionError") or isinstance(exc, ConnectionError)
    if timeout:
        status = status or 408
    retryable = timeout or connection or status in (408, 409, 429) or (status is not None and status >= 500)
    pushback = timeout or status in PUSHBACK_STATUSES
    return FailureKind(status=status, retryable=retryable, pushback=pushback, retry_after=retry_after_of(exc))


def retry_after_of(exc: BaseException) -> float | None:
    """Seconds from a ``Retry-After`` (or ``retry-after-ms``) header on the failure, if any."""
    headers: Any = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        lowered = {str(k).lower(): str(v) for k, v in dict(headers).items()}
    except (TypeError, ValueError):
        return None
    if "retry-after-ms" in lowered:
        try:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())
