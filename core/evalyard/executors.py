"""Executors: where a scorer's batches run.

The runner hands every batch to the executor its scorer names (``Scorer.executor``, or
the run's ``--executor`` for every scorer that is not async) and awaits the Scores. An
executor is anything with this shape, registered by a plugin through
``register_executors(register)`` as ``register(name, factory)``, ``factory(concurrency)``
returning it; a distributed executor (e.g. one submitting batches to a Ray cluster, with
results written by the runner as they come back) needs nothing else from the core.

The core's own, registered by ``evalyard.builtins.executors``:

- ``thread``: a thread pool of ``concurrency`` threads (cheap CPU work, libraries that
  release the GIL). ``inline``, its name before 0.3, still works everywhere an executor is named
  (a scorer's ``executor``, ``--executor``, a suite's ``executor:``, runs stored with it);
- ``process``: ``concurrency`` spawned worker processes (CPU-heavy pure Python), each
  running torch/BLAS/OpenMP on its share of the CPUs;
- ``async``: the event loop; each case's ``ascore`` is one request, and at most
  ``concurrency`` requests of the whole run are in flight.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any, Protocol

from .errors import BatchStopped, InputError, StopRun
from .scoring import Case, Score, Scorer


#: Old executor names that still work, and the name each stands for.
ALIASES = {"inline": "thread"}


def canonical_name(name: str) -> str:
    """The executor a name stands for (``inline`` is ``thread``)."""
    return ALIASES.get(name, name)


class Executor(Protocol):
    """Runs scorer batches. ``check`` runs before the run starts and refuses (raising
    ``evalyard.InputError``) a scorer this executor cannot run; ``close`` runs once at the end."""

    def check(self, scorer: Scorer) -> None: ...

    async def score_batch(self, scorer: Scorer, cases: list[Case]) -> list[Score]: ...

    def close(self) -> None: ...


class ThreadExecutor:
    def __init__(self, concurrency: int) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="evalyard-score")

    def check(self, scorer: Scorer) -> None:
        pass

    async def score_batch(self, scorer: Scorer, cases: list[Case]) -> list[Score]:
        return await asyncio.get_running_loop().run_in_executor(self.pool, scorer.score_batch, cases)

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class AsyncExecutor:
    """Counts concurrency in requests: one case's ``ascore`` is one request, under one limit
    shared by every batch of every async scorer of the run. A scorer that only implements
    ``ascore_batch`` makes its own requests; the model layer's limits bound those."""

    def __init__(self, concurrency: int) -> None:
        self.concurrency = concurrency
        self._requests: asyncio.Semaphore | None = None

    def check(self, scorer: Scorer) -> None:
        pass

    async def score_batch(self, scorer: Scorer, cases: list[Case]) -> list[Score]:
        if self._requests is None:  # made on the running loop
            self._requests = asyncio.Semaphore(self.concurrency)
        requests = self._requests
        cls = type(scorer)
        if cls.ascore is Scorer.ascore and cls.ascore_batch is not Scorer.ascore_batch:
            return await scorer.ascore_batch(cases)

        stops: list[StopRun] = []

        async def one(case: Case) -> Score | None:
            async with requests:
                if stops:  # the run is stopping: start nothing new
                    return None
                try:
                    if cls.ascore is Scorer.ascore:  # a sync scorer asked to run here
                        return (await asyncio.to_thread(scorer.score_batch, [case]))[0]
                    return await scorer.ascore(case)
                except StopRun as stop:
                    stops.append(stop)
                    return None
                except Exception as exc:
                    return Score.failure(exc)

        scores = list(await asyncio.gather(*(one(c) for c in cases)))
        if stops:  # keep what finished: the runner records it, then stops the run
            raise BatchStopped(stops[0], scores)
        return scores

    def close(self) -> None:
        pass


class ProcessExecutor:
    """Spawned workers (not forked: the platform process may hold threads or large models).
    A worker rebuilds each scorer once from its class reference and config values, so a
    scorer must be importable by name in a fresh process, or come from a plugin file.

    Each worker gets CPUs // workers threads for torch, BLAS and OpenMP (at least one):
    left to their defaults, every worker would start a thread per CPU, and two workers on
    two CPUs would run four busy threads that keep taking the cores from each other."""

    def __init__(self, concurrency: int) -> None:
        self.concurrency = concurrency
        self._pool = None

    def check(self, scorer: Scorer) -> None:
        class_reference(type(scorer))

    async def score_batch(self, scorer: Scorer, cases: list[Case]) -> list[Score]:
        if self._pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            self._pool = ProcessPoolExecutor(max_workers=self.concurrency,
                                             mp_context=multiprocessing.get_context("spawn"),
                                             initializer=limit_threads,
                                             initargs=(threads_per_worker(self.concurrency),))
        reference = class_reference(type(scorer))
        return await asyncio.get_running_loop().run_in_executor(
            self._pool, score_in_worker, reference, scorer.config_dict(), cases)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


#: what numeric libraries read, when they load, to size their thread pools
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask: what taskset or a container allows)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def threads_per_worker(workers: int) -> int:
    return max(1, usable_cpus() // max(1, workers))


def limit_threads(threads: int) -> None:
    """A worker's first act: size the thread pools of torch, BLAS and OpenMP. The variables
    reach a library loaded later (the usual case: the scorer imports torch); torch already
    loaded (by the main module a spawned worker re-imports) is told directly."""
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)


def class_reference(cls: type, executor: str = "process") -> tuple[str, str, str | None]:
    """(module, qualified name, plugin file or None): how a worker process finds a scorer class."""
    from .plugins import file_module_name

    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__file__", None)
    if "<locals>" in cls.__qualname__ or module is None:
        raise InputError(f"scorer {cls.name!r} uses executor {executor!r}, but its class is defined inside a function "
                         "and cannot be loaded in a worker process: define it at module level")
    if path and cls.__module__ == file_module_name(path):
        return cls.__module__, cls.__qualname__, path
    if getattr(module, "__spec__", None) is None and cls.__module__ != "__main__":
        raise InputError(f"scorer {cls.name!r} uses executor {executor!r}, but its module {cls.__module__!r} cannot "
                         "be imported in a worker process: put it in an importable module or a plugin file")
    return cls.__module__, cls.__qualname__, None


_worker_scorers: dict[tuple, Scorer] = {}


def score_in_worker(reference: tuple[str, str, str | None], config: dict[str, Any], cases: list[Case]) -> list[Score]:
    """The worker side: build the scorer once per (class, config), then score the batch."""
    import importlib
    import json

    key = (reference, json.dumps(config, sort_keys=True, default=str))
    scorer = _worker_scorers.get(key)
    if scorer is None:
        module_name, qualname, path = reference
        if path is not None and os.path.isfile(path):
            from .plugins import import_file

            module = import_file(path)
        else:
            module = importlib.import_module(module_name)
        cls: Any = module
        for part in qualname.split("."):
            cls = getattr(cls, part)
        scorer = _worker_scorers[key] = cls(cls.make_config(config))
    return scorer.score_batch(cases)
