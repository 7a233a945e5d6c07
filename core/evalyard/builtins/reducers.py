"""The core's epoch reducers (mean, median, mode, max, min, pass_at_k, at_least_k), registered
through the same hook a plugin uses, so ``--reducer`` finds theirs and a plugin's alike."""

from __future__ import annotations

from ..analysis.reducers import BUILTIN_KINDS
from ..hookspecs import hookimpl


@hookimpl
def register_reducers(register):
    for kind in BUILTIN_KINDS.values():
        register(kind.name, kind.reduce, params=tuple(kind.params), needs_k=kind.needs_k)
