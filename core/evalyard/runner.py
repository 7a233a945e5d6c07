"""Running scorers over a suite and keeping every result as soon as it exists.

The runner works in batches. Each finished batch is written in one transaction
(the unique key (run, case, scorer) makes a double write impossible), so a run
killed at any moment loses at most the batches in flight, and ``resume`` scores
exactly the (case, scorer) pairs that have no result yet.

Where work runs depends on the scorer's ``executor``:

- ``inline``: a thread pool (cheap CPU work, or libraries that release the GIL);
- ``process``: a pool of spawned worker processes (CPU-heavy pure-Python work);
- ``async``: the event loop (model calls), bounded by ``concurrency``.

``Executor`` is the seam for running batches elsewhere (e.g. on a Ray cluster
with results going to a shared PostgreSQL): it only has to turn a batch into
Scores.
"""

from __future__ import annotations

import json
import math
import time
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

from . import __version__
from .errors import ConfigError, EvalyardError, InputError, UnknownNameError
from .registry import Registry
from .scoring import Case, Score, Scorer
from .suite import ScorerSpec, Suite

#: Cap on a batch so that a kill loses little work and progress moves.
MAX_BATCH = 256


class RunAborted(EvalyardError):
    """The run stopped early (``--max-errors`` reached); results so far are kept."""

    totals: dict[str, Any] | None = None  # set to the stored totals before it is raised


@dataclass
class PreparedScorer:
    spec: ScorerSpec
    scorer: Scorer
    plugin: str

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def threshold(self) -> float | None:
        return self.spec.threshold if self.spec.threshold is not None else self.scorer.threshold

    def describe(self) -> dict[str, Any]:
        cls = type(self.scorer)
        return {
            "name": self.name,
            "plugin": self.plugin,
            "version": cls.version,
            "config": _jsonable(self.scorer.config_dict()),
            "threshold": self.threshold,
            "higher_is_better": cls.higher_is_better,
            "labels": list(cls.labels),
        }


def _jsonable(value: Any) -> Any:
    """A JSON-safe copy (tuples to lists, unknown objects to strings) so SQLite and PostgreSQL store the same."""
    return json.loads(json.dumps(value, default=str))


def prepare_scorers(specs: list[ScorerSpec], registry: Registry) -> list[PreparedScorer]:
    """Resolve names and check configs; every error names where the scorer was asked for."""
    prepared = []
    seen: set[str] = set()
    for spec in specs:
        where = spec.origin or "scorer"
        if spec.name in seen:
            raise InputError(f"{where}: scorer {spec.name!r} is selected twice")
        seen.add(spec.name)
        try:
            cls = registry.scorer(spec.name)
        except UnknownNameError as exc:
            raise InputError(f"{where}: {exc}") from None
        try:
            config = cls.make_config(spec.config)
            scorer = cls(config)
        except ConfigError as exc:
            raise InputError(f"{where}: bad config for scorer {exc}") from None
        prepared.append(PreparedScorer(spec, scorer, registry.scorers[spec.name].plugin))
    if not prepared:
        raise InputError("no scorers selected: list them in the suite file or pass --scorer NAME")
    return prepared


def check_required_fields(cases: list[Case], origins: list[str], prepared: list[PreparedScorer]) -> None:
    """Fail before any scoring if a case lacks a field a selected scorer needs."""
    requirements = [(p.name, p.scorer.required_fields()) for p in prepared]
    for case, origin in zip(cases, origins):
        for scorer_name, fields in requirements:
            for field_name in fields:
                if not case.has(field_name):
                    path, _, line = origin.rpartition(":")
                    raise InputError(
                        f"case {case.id!r} has no {field_name}, which scorer {scorer_name!r} requires",
                        path=path, line=int(line) if line.isdigit() else None, field=field_name,
                    )


def _checked(score: Any, scorer_name: str) -> Score:
    """Turn whatever a scorer returned into a valid Score; a bad return is an error, never a 0."""
    if not isinstance(score, Score):
        return Score.failure(f"scorer {scorer_name!r} returned {type(score).__name__}, not a Score")
    if score.error is None:
        if score.value is not None:
            try:
                score.value = float(score.value)
            except (TypeError, ValueError):
                return Score.failure(f"scorer {scorer_name!r} returned a non-numeric value {score.value!r}")
            if math.isnan(score.value):
                return Score.failure(f"scorer {scorer_name!r} returned NaN", **score.details)
        elif score.label is None:
            return Score.failure(f"scorer {scorer_name!r} returned neither a value nor a label")
    else:
        score.value = None
        score.passed = None
    return score


# Worker-process side of the "process" executor: scorer instances are built once per worker.
_worker_scorers: dict[tuple, Scorer] = {}


def _score_in_worker(cls: type[Scorer], config: Any, cases: list[Case]) -> list[Score]:
    key = (cls.__module__, cls.__qualname__, repr(config))
    scorer = _worker_scorers.get(key)
    if scorer is None:
        scorer = _worker_scorers[key] = cls(config)
    return scorer.score_batch(cases)


class Runner:
    def __init__(
        self,
        store=None,
        *,
        concurrency: int = 4,
        max_errors: int | None = None,
        on_progress: Callable[[int], None] | None = None,
    ) -> None:
        self.store = store
        self.concurrency = max(1, concurrency)
        self.max_errors = max_errors
        self.on_progress = on_progress or (lambda n: None)
        self.errors = 0
        self.run_id: str | None = None

    # -- public --------------------------------------------------------
    def start(self, suite: Suite, prepared: list[PreparedScorer], *, name: str = "", source: str = "") -> str:
        suite_id = self.store.ensure_suite(suite)
        versions = {
            "evalyard": __version__,
            "plugins": _plugin_versions({p.plugin for p in prepared}),
            "python": _python_version(),
        }
        return self.store.create_run(
            suite_id, suite.cases, name=name, scorers=[p.describe() for p in prepared],
            versions=versions, source=source or suite.source,
        )

    def pending(self, run_id: str, cases: list[Case], prepared: list[PreparedScorer]) -> list[tuple[PreparedScorer, list[Case]]]:
        done = self.store.done_pairs(run_id)
        work = []
        for p in prepared:
            todo = [c for c in cases if (c.id, p.name) not in done]
            if todo:
                work.append((p, todo))
        return work

    def execute(self, run_id: str, cases: list[Case], prepared: list[PreparedScorer]) -> dict[str, Any]:
        """Score every pending (case, scorer) pair of an existing run (``--resume``); returns its totals."""
        work = self.pending(run_id, cases, prepared)
        self.store.set_status(run_id, "running")
        return self._run(run_id, work, prepared)

    def execute_new(
        self, suite: Suite, prepared: list[PreparedScorer], open_store: Callable[[], Any], *,
        name: str = "", source: str = "",
    ) -> dict[str, Any]:
        """Create a run and score it, opening the database *while* the first batches are scored.

        Opening the store (SQLAlchemy/SQLModel imports, migrations check) costs ~0.5 s;
        scorers whose work happens in other processes or on a model server need not wait
        for it. Scores that arrive before the run exists wait in memory and are written
        the moment it does; a run that never came to exist has nothing to resume.
        """
        def open_and_start() -> str:
            if self.store is None:
                self.store = open_store()
            return self.start(suite, prepared, name=name, source=source)

        opener = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalyard-store")
        run_ref = opener.submit(open_and_start)
        opener.shutdown(wait=False)
        return self._run(run_ref, [(p, list(suite.cases)) for p in prepared], prepared)

    def _resolve(self, run_ref: Any) -> str:
        self.run_id = run_ref.result() if isinstance(run_ref, Future) else run_ref
        return self.run_id

    def _run(self, run_ref: Any, work: list[tuple[PreparedScorer, list[Case]]], prepared: list[PreparedScorer]) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            import asyncio  # here, not at the top: scorers start their workers before this is loaded

            asyncio.run(self._execute(run_ref, work))
        except KeyboardInterrupt:
            self.store.set_status(self._resolve(run_ref), "interrupted")
            raise
        except RunAborted as exc:
            run_id = self._resolve(run_ref)
            exc.totals = self.totals(run_id, prepared, time.perf_counter() - started)
            self.store.set_status(run_id, "failed", exc.totals)
            raise
        finally:
            for p in prepared:
                p.scorer.close()
        run_id = self._resolve(run_ref)
        totals = self.totals(run_id, prepared, time.perf_counter() - started)
        self.store.set_status(run_id, "completed", totals)
        return totals

    def totals(self, run_id: str, prepared: list[PreparedScorer], elapsed: float) -> dict[str, Any]:
        from .stats import summarize

        return {
            "duration_s": round(elapsed, 3),
            "scorers": {p.name: summarize(self.store.outcomes(run_id, p.name)) for p in prepared},
        }

    # -- internals -----------------------------------------------------
    async def _execute(self, run_ref: Any, work: list[tuple[PreparedScorer, list[Case]]]) -> None:
        threads = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="evalyard-score")
        processes: Executor | None = None
        if any(p.scorer.executor == "process" for p, _ in work):
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor  # imports multiprocessing's machinery: only when used

            # spawn, not fork: the main process may hold threads or large models.
            processes = ProcessPoolExecutor(max_workers=self.concurrency, mp_context=multiprocessing.get_context("spawn"))
        import asyncio

        semaphore = asyncio.Semaphore(self.concurrency)
        loop = asyncio.get_running_loop()

        async def run_batch(p: PreparedScorer, batch: list[Case]) -> tuple[PreparedScorer, list[Case], list[Any], float]:
            async with semaphore:
                t0 = time.perf_counter()
                try:
                    if p.scorer.executor == "async" or p.scorer.is_async:
                        scores = await p.scorer.ascore_batch(batch)
                    elif p.scorer.executor == "process":
                        scores = await loop.run_in_executor(
                            processes, _score_in_worker, type(p.scorer), p.scorer.config, batch
                        )
                    else:
                        scores = await loop.run_in_executor(threads, p.scorer.score_batch, batch)
                    if len(scores) != len(batch):
                        raise RuntimeError(f"returned {len(scores)} scores for {len(batch)} cases")
                except Exception as exc:  # a whole batch failed: record it for every case
                    scores = [Score.failure(exc) for _ in batch]
                return p, batch, scores, time.perf_counter() - t0

        tasks = []
        for p, todo in work:
            size = max(1, min(p.scorer.batch_size, MAX_BATCH))
            for start in range(0, len(todo), size):
                tasks.append(asyncio.ensure_future(run_batch(p, todo[start:start + size])))
        run_id = run_ref if isinstance(run_ref, str) else None
        try:
            for next_done in asyncio.as_completed(tasks):
                p, batch, scores, elapsed = await next_done
                if run_id is None:  # the store is still opening: wait for the run to exist
                    run_id = await asyncio.wrap_future(run_ref)
                self._record(run_id, p, batch, scores, elapsed)
                self.on_progress(len(batch))
                if self.max_errors is not None and self.errors > self.max_errors:
                    raise RunAborted(f"stopped after {self.errors} errors (--max-errors {self.max_errors})")
        finally:
            for task in tasks:
                task.cancel()
            threads.shutdown(wait=False, cancel_futures=True)
            if processes is not None:
                processes.shutdown(wait=False, cancel_futures=True)

    def _record(self, run_id: str, p: PreparedScorer, batch: list[Case], scores: list[Any], elapsed: float) -> None:
        per_case_ms = elapsed * 1000 / max(1, len(batch))
        threshold = p.threshold
        user_threshold = p.spec.threshold is not None
        higher = type(p.scorer).higher_is_better
        rows = []
        for case, raw in zip(batch, scores):
            score = _checked(raw, p.name)
            if score.error is not None:
                self.errors += 1
            elif score.value is not None and threshold is not None and (
                score.passed is None or user_threshold
            ):  # a threshold the user set wins over the scorer's own verdict
                score.passed = score.value >= threshold if higher else score.value <= threshold
            rows.append({
                "case_id": case.id, "scorer": p.name, "value": score.value, "label": score.label,
                "passed": score.passed, "details": _jsonable(score.details or {}), "error": score.error,
                "usage": _jsonable(score.usage) if score.usage else None, "duration_ms": per_case_ms,
            })
        self.store.write_results(run_id, rows)


def _plugin_versions(names: set[str]) -> dict[str, str | None]:
    from .plugins import plugin_infos

    return {i.name: ((i.version or __version__) if i.builtin else i.version) for i in plugin_infos() if i.name in names}


def _python_version() -> str:
    import platform

    return platform.python_version()
