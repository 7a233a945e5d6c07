"""A run's results as a lazy sequence over the database (``RunResult.results``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    from .store import Store



class Results(Sequence):
    """One dict per (case, scorer), in the order they were stored. Iterating streams rows in
    chunks, ``len`` is one COUNT, an index or a slice reads only those rows, ``page`` one page."""

    def __init__(self, store: Store, run_id: str) -> None:
        self._store = store
        self._run_id = run_id

    def _rows(self, **page: int) -> Iterator[dict[str, Any]]:
        from .store.queries import result_dicts

        return result_dicts(self._store, self._run_id, **page)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if self._store is None:
            return iter(())
        return self._rows()

    def __len__(self) -> int:
        return 0 if self._store is None else self._store.result_count(self._run_id)

    def page(self, offset: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        """Results ``offset`` to ``offset + limit`` (fewer at the end)."""
        if self._store is None or limit <= 0:
            return []
        return list(self._rows(offset=offset, limit=limit))

    def __getitem__(self, index):
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return self.page(start, max(0, stop - start))[::step]
            return self.page(start, max(0, stop - start))
        if index < 0:
            index += len(self)
        found = self.page(index, 1)
        if not found:
            raise IndexError("result index out of range")
        return found[0]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, Results)):
            return list(self) == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"<Results of run {self._run_id}: {len(self)} rows (lazy; list() loads them all)>"
