"""Executors: where a scorer's batches run.

The runner hands every batch to the executor its scorer names (``Scorer.executor``, or
the run's ``--executor`` for every scorer that is not async) and awaits the Scores. An
executor is anything with this shape, registered by a plugin through
``register_executors(register)`` as ``register(name, factory)``, ``factory(concurrency)``
returning it; a distributed executor (e.g. one submitting batches to a Ray cluster, with
results written by the runner as they come back) needs nothing else from the core.

An executor only places and transports. What a batch does on a worker (build the scorer from
its reference, set it up with the worker's runtime, score, map exceptions, close) is
``evalyard.scorer_ref``'s, and how many batches are pending is the runner's ``Budget``.

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
from typing import TYPE_CHECKING, Any, Protocol

from .errors import StopRun
from .scorer_ref import Outcome, ScorerRef, class_reference, close_warm, outcome, warm
from .models.trial import trial
from .scoring import Case, Score, Scorer

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = ["ALIASES", "AsyncExecutor", "Budget", "Executor", "ProcessExecutor", "ThreadExecutor", "canonical_name",
           "class_reference"]


#: Old executor names that still work, and the name each stands for.
ALIASES = {"inline": "thread"}


def canonical_name(name: str) -> str:
    """The executor a name stands for (``inline`` is ``thread``)."""
    return ALIASES.get(name, name)


class Executor(Protocol):
    """Places and transports scorer batches; what a batch does is ``evalyard.scorer_ref``'s.

    ``check`` runs before the run starts and refuses (raising ``evalyard.InputError``) a scorer
    this executor cannot run; ``close`` runs once at the end. Optional: ``bind(budget, runtime)``,
    called once right after the executor is made, hands it the run's ``Budget`` (the one
    concurrency budget, owned by the runner) and the run's ``Runtime`` (``runtime.recipe`` is
    what a worker rebuilds its runtime from: ``ScorerRef.of(scorer, runtime.recipe)``)."""

    def check(self, scorer: Scorer) -> None: ...

    async def score_batch(self, scorer: Scorer, cases: list[Case]) -> list[Score]: ...

    def close(self) -> None: ...


class Budget:
    """The run's one concurrency budget, owned by the runner: ``concurrency`` workers (threads,
    processes, actors) or requests at once, and ``in_flight`` batches pending, which the runner's
    ``_bounded`` stage alone enforces. ``requests`` is the shared limit on requests in flight:
    generations and async scorers' cases, all of the run's together."""

    def __init__(self, concurrency: int) -> None:
        self.concurrency = max(1, concurrency)
        self._requests: asyncio.Semaphore | None = None

    @property
    def in_flight(self) -> int:
        """Batches (or generations) pending at once: enough to keep every worker and request
        slot busy while finished ones are written, few enough that memory stays flat."""
        return max(4, 2 * self.concurrency)

    @property
    def requests(self) -> asyncio.Semaphore:
        if self._requests is None:  # made on the running loop, at first use
            self._requests = asyncio.Semaphore(self.concurrency)
        return self._requests


class ThreadExecutor:
    def __init__(self, concurrency: int) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="evalyard-score")

    def check(self, scorer: Scorer) -> None:
        pass

    async def score_batch(self, scorer: Scorer, cases: list[Case]) -> list[Score]:
        done = await asyncio.get_running_loop().run_in_executor(self.pool, outcome, scorer, cases)
        return done.result()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class AsyncExecutor:
    """Counts concurrency in requests: one case's ``ascore`` is one request, under the run's
    ``Budget.requests``, shared by every batch of every async scorer (and the generations). A
    scorer that only implements ``ascore_batch`` makes its own requests; the model layer's
    limits bound those."""

    def __init__(self, concurrency: int) -> None:
        self.budget = Budget(concurrency)  # its own, until a run binds it to the run's

    def bind(self, budget: Budget, runtime: Runtime) -> None:
        self.budget = budget

    def check(self, scorer: Scorer) -> None:
        pass

    async def score_batch(self, scorer: Scorer, cases: list[Case]) -> list[Score]:
        requests = self.budget.requests
        cls = type(scorer)
        if cls.ascore is Scorer.ascore and cls.ascore_batch is not Scorer.ascore_batch:
            return await _batch_by_epoch(scorer, cases)

        stops: list[StopRun] = []

        async def one(case: Case) -> Score | None:
            async with requests:
                if stops:  # the run is stopping: start nothing new
                    return None
                with trial(case.epoch):  # its model calls are this epoch's (own cache key, seed)
                    if cls.ascore is Scorer.ascore:  # a sync scorer asked to run here
                        done = await asyncio.to_thread(outcome, scorer, [case])
                    else:
                        done = await aoutcome(scorer, case)
                if done.stop is not None:
                    stops.append(done.stop)
                    return None
                return done.scores[0]  # type: ignore[index]

        scores = list(await asyncio.gather(*(one(c) for c in cases)))
        return Outcome(scores, stops[0] if stops else None).result()

    def close(self) -> None:
        pass


async def _batch_by_epoch(scorer: Scorer, cases: list[Case]) -> list[Score]:
    """``ascore_batch`` once per epoch among ``cases`` (each call inside its epoch), in order."""
    epochs = list(dict.fromkeys(c.epoch for c in cases))
    if len(epochs) == 1:
        with trial(epochs[0]):
            return await scorer.ascore_batch(cases)
    scores: list[Score | None] = [None] * len(cases)
    for epoch in epochs:
        positions = [i for i, c in enumerate(cases) if c.epoch == epoch]
        with trial(epoch):
            made = await scorer.ascore_batch([cases[i] for i in positions])
        for i, score in zip(positions, made):
            scores[i] = score
    return scores  # type: ignore[return-value]


async def aoutcome(scorer: Scorer, case: Case) -> Outcome:
    """``outcome`` for one case of an async scorer: its ``ascore``, mapped the same way."""
    try:
        return Outcome([await scorer.ascore(case)])
    except StopRun as stop:
        return Outcome(None, stop)
    except Exception as exc:
        return Outcome([Score.failure(exc)])


class ProcessExecutor:
    """Spawned workers (not forked: the platform process may hold threads or large models).
    A worker builds each scorer once from its ``ScorerRef`` (class reference and config values),
    calls its ``setup`` with the worker's runtime (rebuilt from the run's settings) and closes it
    when the worker exits, so a scorer must be importable by name in a fresh process, or come
    from a plugin file.

    Each worker gets CPUs // workers threads for torch, BLAS and OpenMP (at least one):
    left to their defaults, every worker would start a thread per CPU, and two workers on
    two CPUs would run four busy threads that keep taking the cores from each other."""

    def __init__(self, concurrency: int) -> None:
        self.concurrency = concurrency
        self.recipe: Any = None  # the run's ``evalyard.app.RuntimeRecipe``
        self._pool = None

    def bind(self, budget: Budget, runtime: Runtime) -> None:
        self.recipe = getattr(runtime, "recipe", None)

    def check(self, scorer: Scorer) -> None:
        class_reference(type(scorer))

    async def score_batch(self, scorer: Scorer, cases: list[Case]) -> list[Score]:
        if self._pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            self._pool = ProcessPoolExecutor(max_workers=self.concurrency,
                                             mp_context=multiprocessing.get_context("spawn"),
                                             initializer=start_worker,
                                             initargs=(threads_per_worker(self.concurrency),))
        ref = ScorerRef.of(scorer, self.recipe)
        done = await asyncio.get_running_loop().run_in_executor(self._pool, score_in_worker, ref, cases)
        return done.result()

    def close(self) -> None:
        if self._pool is not None:  # each worker closes its scorers as it exits (``start_worker``)
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


def start_worker(threads: int) -> None:
    """A process worker's set-up: its share of the CPUs, and its scorers closed when it exits
    (the pool's shutdown ends each worker normally, which runs ``atexit``)."""
    import atexit

    limit_threads(threads)
    atexit.register(close_warm)


def score_in_worker(ref: ScorerRef, cases: list[Case]) -> Outcome:
    """The worker side: the scorer built and set up once per (class, config), then the batch."""
    return warm(ref).score(cases)
