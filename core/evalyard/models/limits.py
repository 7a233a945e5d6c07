"""Concurrency and rate limits for model requests.

- :class:`Slots`: a counting semaphore whose size can change while it is in use, safe
  across threads and event loops (waiters are woken on their own loop), so a sync
  caller on the layer's private loop and an async caller on the runner's loop share
  the same limits.
- :class:`AdaptiveLimit`: per-model concurrency with AIMD: each success adds
  ``1/limit`` (about one more slot per window of answered requests); a pushback
  (429, 503, timeout) halves it. Only one halving per window: a burst of 429s from
  requests that all started before the last cut counts once.
- :class:`RequestRate`: an optional requests-per-minute limit that spaces starts
  ``60/rpm`` seconds apart.
"""

from __future__ import annotations

import asyncio
import collections
import threading
import time


class Slots:
    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("a limit needs at least one slot")
        self._size = size
        self._used = 0
        self._lock = threading.Lock()
        self._waiters: collections.deque[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = collections.deque()

    @property
    def size(self) -> int:
        return self._size

    def resize(self, size: int) -> None:
        with self._lock:
            self._size = max(1, size)
        self._wake()

    async def acquire(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._used < self._size and not self._waiters:
                self._used += 1
                return
            future = loop.create_future()
            self._waiters.append((loop, future))
        try:
            await future
        except asyncio.CancelledError:
            with self._lock:
                try:
                    self._waiters.remove((loop, future))
                    granted = False
                except ValueError:
                    granted = True  # the slot was handed over just as we were cancelled
            if granted:
                self.release()
            raise

    def release(self) -> None:
        with self._lock:
            self._used -= 1
        self._wake()

    def _wake(self) -> None:
        while True:
            with self._lock:
                if not self._waiters or self._used >= self._size:
                    return
                loop, future = self._waiters.popleft()
                self._used += 1
            loop.call_soon_threadsafe(_grant, future)

    async def __aenter__(self) -> "Slots":
        await self.acquire()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()


def _grant(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


class AdaptiveLimit:
    """Per-model concurrency that backs off on pushback and grows back on success."""

    def __init__(self, maximum: int, minimum: int = 1) -> None:
        self.maximum, self.minimum = maximum, minimum
        self.limit = float(maximum)
        self.slots = Slots(maximum)
        self.window = 0
        self.backoffs = 0
        self._lock = threading.Lock()

    async def acquire(self) -> int:
        """Wait for a slot; returns the window the request starts in."""
        await self.slots.acquire()
        return self.window

    def release(self) -> None:
        self.slots.release()

    def success(self) -> None:
        with self._lock:
            if self.limit < self.maximum:
                self.limit = min(self.maximum, self.limit + 1 / self.limit)
                self.slots.resize(int(self.limit))

    def pushback(self, started_window: int) -> None:
        with self._lock:
            if started_window != self.window:
                return
            self.window += 1
            self.backoffs += 1
            self.limit = max(self.minimum, self.limit / 2)
            self.slots.resize(int(self.limit))


class RequestRate:
    """At most ``rpm`` request starts per minute, evenly spaced."""

    def __init__(self, rpm: float) -> None:
        if rpm <= 0:
            raise ValueError("requests per minute must be positive")
        self.interval = 60.0 / rpm
        self._next = 0.0
        self._lock = threading.Lock()

    async def wait(self) -> None:
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        delay = start - now
        if delay > 0:
            await asyncio.sleep(delay)
