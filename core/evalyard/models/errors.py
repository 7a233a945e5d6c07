"""Errors raised by the model layer.

They are ordinary exceptions, not ``EvalyardError``: a failed model call is a recorded
error on one result, not bad user input. ``CostLimitReached`` is the exception a
runner turns into a clean, resumable stop.
"""

from __future__ import annotations

from typing import Any

from ..errors import StopRun


class ModelCallError(Exception):
    """A model call that failed for good (after any retries).

    ``status`` is the HTTP status when there was one; ``attempts`` how many requests
    were made; ``retryable`` whether the last failure was of a kind that is retried.
    """

    def __init__(self, message: str, *, model: str, status: int | None = None, attempts: int = 1,
                 retryable: bool = False) -> None:
        super().__init__(message)
        self.model, self.status, self.attempts, self.retryable = model, status, attempts, retryable


class StructuredOutputError(Exception):
    """The model's reply could not be read as the requested JSON, even after one repair call.

    ``raw`` holds the reply text (the last one), so it can go into a result's details;
    ``completions`` the calls it took (they were made and paid for: a result's usage counts them).
    """

    def __init__(self, message: str, *, raw: str, model: str = "", attempts: int = 1,
                 completions: list | None = None) -> None:
        super().__init__(message)
        self.raw, self.model, self.attempts = raw, model, attempts
        self.completions = list(completions or [])

    def details(self) -> dict[str, Any]:
        return {"raw": self.raw, "parse_error": str(self)}


class CostLimitReached(StopRun):
    """The run's spending reached ``max_cost``; no further model calls are made.

    Raised before a call would start, so every answered call is kept and a resumed
    run carries on from there.
    """

    def __init__(self, spent: float, limit: float) -> None:
        super().__init__(f"cost limit reached: ${spent:.4f} spent of ${limit:.4f} allowed")
        self.spent, self.limit = spent, limit
