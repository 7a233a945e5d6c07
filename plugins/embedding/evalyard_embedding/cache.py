"""A size-bounded, thread-safe LRU cache of embeddings.

References shared across runs, hedge phrases and repeated candidates are
embedded once per process. Token-level embeddings for BERTScore are large
(~60 KB for a 40-token text with MiniLM), so the cache is bounded by bytes,
not by entries: the ``embedding.cache_mb`` setting (``EVALYARD_EMBEDDING_CACHE_MB``, default
512) per cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Hashable

DEFAULT_BUDGET_MB = 512


def budget(megabytes: float | None) -> int:
    """Bytes for a budget in megabytes (None: the default)."""
    return max(0, int((DEFAULT_BUDGET_MB if megabytes is None else megabytes) * 1024 * 1024))


class EmbeddingCache:
    def __init__(self, max_bytes: int | None = None) -> None:
        self.max_bytes = budget(None) if max_bytes is None else max_bytes
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> Any | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[0]

    def put(self, key: Hashable, value: Any, nbytes: int) -> None:
        if nbytes > self.max_bytes:
            return  # would evict everything else and still not fit
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._entries[key] = (value, nbytes)
            self._bytes += nbytes
            while self._bytes > self.max_bytes:
                _, (_, size) = self._entries.popitem(last=False)
                self._bytes -= size

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        return self._bytes
