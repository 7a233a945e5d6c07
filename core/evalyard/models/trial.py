"""Which trial (epoch) of a case the current model call belongs to, for ``--epochs N``.

The runner sets it around each case's generation and each case's scoring (a context variable:
every task started for that case inherits it, whatever scorer or generator makes the call), and
the model layer reads it where it builds a request: an epoch past the first is a cache key of its
own, so epochs are real samples, and the provider's ``seed`` is set from it where the provider
takes one. Outside a run with epochs nothing is set and requests are exactly as before."""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Iterator


@dataclass(frozen=True)
class Trial:
    epoch: int


_CURRENT: ContextVar[Trial | None] = ContextVar("evalyard_trial", default=None)


def current_trial() -> Trial | None:
    return _CURRENT.get()


@contextmanager
def trial(epoch: int | None) -> Iterator[None]:
    """Calls made inside belong to ``epoch`` (``Case.epoch``: None outside a run with epochs,
    where this changes nothing)."""
    if epoch is None:
        yield
        return
    token = _CURRENT.set(Trial(epoch))
    try:
        yield
    finally:
        _CURRENT.reset(token)
