"""The core's executors (thread, process, async), registered through the same hook a plugin uses.

Each factory imports its implementation when a run first needs it, so loading plugins
(every command's start-up) never imports asyncio or multiprocessing.
"""

from __future__ import annotations

from ..hookspecs import hookimpl


def thread(concurrency: int):
    from ..executors import ThreadExecutor

    return ThreadExecutor(concurrency)


def process(concurrency: int):
    from ..executors import ProcessExecutor

    return ProcessExecutor(concurrency)


def run_async(concurrency: int):
    from ..executors import AsyncExecutor

    return AsyncExecutor(concurrency)


@hookimpl
def register_executors(register):
    register("thread", thread)  # ``inline`` (its old name) is an alias: evalyard.executors.ALIASES
    register("process", process)
    register("async", run_async)
