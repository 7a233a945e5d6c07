"""Response caches: a small protocol, an in-memory cache and one on the ``model_calls`` table.

Only successful calls are ever put; an error is never cached, so a rerun asks again.

``SQLCache`` is one of the two modules outside ``store/`` that write SQL (the other is the batch
ledger, ``batch.py``), on purpose: the model layer sits below the store in the layering (a
``ModelLayer`` works with no store at all, with ``MemoryCache``), it is handed a bare engine, and
its get/put is the hottest path of a judged run (a keyed primary-key read per call, from a
worker thread). Routing it through ``Store`` would make the model layer depend on the run store
for one table it owns alone; no other module reads ``model_calls`` except the planner, through
``store.queries.cached_calls``.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .records import CallRecord

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


@runtime_checkable
class ResponseCache(Protocol):
    """What the model layer needs from a cache.

    ``blocking`` tells the layer to call ``get``/``put`` from a worker thread, so a
    database round trip never stalls the event loop.
    """

    blocking: bool

    def get(self, key: str) -> CallRecord | None: ...

    def put(self, key: str, record: CallRecord) -> None: ...


class MemoryCache:
    """A dict of records: for tests, notebooks and runs without a database."""

    blocking = False

    def __init__(self) -> None:
        self._records: dict[str, CallRecord] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> CallRecord | None:
        return self._records.get(key)

    def put(self, key: str, record: CallRecord) -> None:
        with self._lock:
            self._records[key] = record

    def __len__(self) -> int:
        return len(self._records)


class SQLCache:
    """Records in the store's ``model_calls`` table, through any SQLAlchemy engine."""

    blocking = True

    def __init__(self, engine: "Engine") -> None:
        from ..store.models import ModelCallRow

        self.engine = engine
        self.table = ModelCallRow.__table__

    def get(self, key: str) -> CallRecord | None:
        from sqlalchemy import select

        t = self.table
        with self.engine.connect() as connection:
            row = connection.execute(
                select(t.c.model, t.c.request, t.c.response, t.c.usage, t.c.latency_ms, t.c.created_at)
                .where(t.c.key == key)).first()
        if row is None:
            return None
        return CallRecord(model=row.model, request=row.request or {}, response=row.response or {},
                          usage=row.usage, latency_ms=row.latency_ms, created_at=row.created_at)

    def put(self, key: str, record: CallRecord) -> None:
        from sqlalchemy import insert, update
        from sqlalchemy.exc import IntegrityError

        created_at = record.created_at
        if _naive(self.table) and created_at.tzinfo is not None:
            created_at = created_at.astimezone(timezone.utc).replace(tzinfo=None)
        values = {"model": record.model, "request": record.request, "response": record.response,
                  "usage": record.usage, "latency_ms": record.latency_ms, "created_at": created_at}
        try:
            with self.engine.begin() as connection:
                connection.execute(insert(self.table).values(key=key, **values))
        except IntegrityError:
            # Two identical calls answered at once (or a resumed run): the newer answer wins.
            with self.engine.begin() as connection:
                connection.execute(update(self.table).where(self.table.c.key == key).values(**values))


def parse_age(text: str) -> timedelta:
    """``90s``, ``30m``, ``12h``, ``7d``, ``2w`` -> a timedelta (for ``cache clear --older-than``)."""
    units = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
    text = text.strip().lower()
    number, unit = text[:-1], text[-1:]
    if unit not in units:
        number, unit = text, "d"
    try:
        amount = float(number)
    except ValueError:
        raise ValueError(f"not an age: {text!r} (use e.g. 90s, 30m, 12h, 7d, 2w)") from None
    if amount < 0:
        raise ValueError(f"not an age: {text!r} (negative)")
    return timedelta(**{units[unit]: amount})


def _where(table: Any, model: str | None, older_than: timedelta | None, now: datetime | None) -> list[Any]:
    clauses = []
    if model is not None:
        clauses.append(table.c.model == model)
    if older_than is not None:
        cutoff = (now or datetime.now(timezone.utc)) - older_than
        # SQLite hands back naive datetimes; compare in the same form the column holds.
        if _naive(table):
            cutoff = cutoff.replace(tzinfo=None)
        clauses.append(table.c.created_at < cutoff)
    return clauses


def _naive(table: Any) -> bool:
    return not getattr(table.c.created_at.type, "timezone", False)


def cache_stats(engine: "Engine") -> list[dict[str, Any]]:
    """One entry per model: cached calls, tokens, the original cost, oldest and newest entry."""
    from sqlalchemy import func, select

    from ..store.models import ModelCallRow

    t = ModelCallRow.__table__
    with engine.connect() as connection:
        rows = connection.execute(
            select(t.c.model, func.count(), func.min(t.c.created_at), func.max(t.c.created_at))
            .group_by(t.c.model).order_by(t.c.model)).all()
        usage_rows = connection.execute(select(t.c.model, t.c.usage)).all()
    totals: dict[str, dict[str, Any]] = {}
    for model, usage in usage_rows:
        entry = totals.setdefault(model, {"prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0,
                                          "unknown_cost": 0})
        usage = usage or {}
        entry["prompt_tokens"] += usage.get("prompt_tokens") or 0
        entry["completion_tokens"] += usage.get("completion_tokens") or 0
        if usage.get("cost") is None:
            entry["unknown_cost"] += 1
        else:
            entry["cost"] += usage["cost"]
    out = []
    for model, count, oldest, newest in rows:
        entry = totals.get(model, {})
        cost = entry.get("cost") if entry.get("unknown_cost", 0) < count else None
        out.append({"model": model, "calls": count, "prompt_tokens": entry.get("prompt_tokens", 0),
                    "completion_tokens": entry.get("completion_tokens", 0), "cost": cost,
                    "calls_with_unknown_cost": entry.get("unknown_cost", 0),
                    "oldest": oldest, "newest": newest})
    return out


def clear_cache(engine: "Engine", model: str | None = None, older_than: timedelta | None = None,
                now: datetime | None = None) -> int:
    """Delete cached calls (all, one model's, and/or those older than an age); returns how many."""
    from sqlalchemy import delete

    from ..store.models import ModelCallRow

    t = ModelCallRow.__table__
    statement = delete(t)
    for clause in _where(t, model, older_than, now):
        statement = statement.where(clause)
    with engine.begin() as connection:
        return connection.execute(statement).rowcount or 0
