"""A private event loop on a daemon thread, for the model layer's sync wrappers.

Running every sync call on one long-lived loop works the same from plain scripts,
from inside a running loop (notebooks, FastAPI, pytest-asyncio), and keeps litellm's
async clients on one loop for the whole process.

The loop is shared by every layer in the process (:func:`shared_loop`): litellm binds
its HTTP clients and its logging worker to the loop they first run on, and a loop
closed under them leaves "event loop is closed" errors behind. It is the one piece
of process-wide state here, and it holds nothing but the thread and its loop.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future
from typing import Any, Coroutine, TypeVar

T = TypeVar("T")


class BackgroundLoop:
    def __init__(self, name: str = "evalyard-models") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                self._thread = threading.Thread(target=run, name=self._name, daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
            return self._loop

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        loop = self._start()
        if threading.current_thread() is self._thread:
            coroutine.close()
            raise RuntimeError("a sync model call from inside the model layer's own loop would wait for itself; "
                               "await the async method instead")
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result()

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> "Future[T]":
        """Start ``coroutine`` on the loop and return its concurrent future (``cancel()`` cancels the task)."""
        loop = self._start()
        if threading.current_thread() is self._thread:
            coroutine.close()
            raise RuntimeError("cannot wait for the background loop from inside it; await the coroutine instead")
        return asyncio.run_coroutine_threadsafe(coroutine, loop)

    def close(self) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(10)
        loop.close()


_shared: BackgroundLoop | None = None
_shared_lock = threading.Lock()


def shared_loop() -> BackgroundLoop:
    """The process's background loop for sync model calls (started on first use)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = BackgroundLoop()
        return _shared
