"""Running a suite in stages, keeping everything as soon as it exists.

A run goes through three stages, each resumable after an interruption (even ``kill -9``):

1. **generate**: cases without a candidate get one from the run's generator (a model under
   test); each candidate is stored as it arrives, so a resumed run generates only what is
   still missing.
2. **score**: every (case, scorer) pair is scored in batches on the scorer's executor; each
   finished batch is written in one transaction (the unique key (run, case, scorer) makes a
   double write impossible), so a resumed run scores exactly the pairs without a result.
3. **aggregate**: each scorer's corpus-level metrics (``Scorer.aggregate``) over all of its
   stored results, with the summary statistics, stored with the run.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Coroutine, Iterator, TypeVar

from .errors import BatchStopped, ConfigError, EvalyardError, InputError, StopRun, UnknownNameError
from .analysis.reducers import Reducer, Trial, parse_reducer
from .extraction import Extraction, ExtractionFailed, parse_extraction
from .retrieval import generated_context
from .executors import Budget, canonical_name
from .models.trial import trial
from .registry import Entry, Registry
from .scoring import Case, Generation, Generator, Score, Scorer
from .suite import ScorerSpec, Suite
from .version import __version__

#: Cap on a batch so that a kill loses little work and progress moves.
MAX_BATCH = 256
#: Generated candidates stored per transaction.
GENERATED_CHUNK = 32
#: ... or what arrived in this many seconds, so a slow model's progress is stored as it goes.
GENERATED_EVERY_S = 0.5
#: Cases read (and, for a new run, stored) at a time: a run's memory is set by this, not its size.
WINDOW = 1000
#: What a generation may give besides its text (``Generation.messages``, ``.retrieved``): stored in
#: the output's ``dialogue``, it replaces the case's own field for scoring.
GENERATED_FIELDS = ("messages", "retrieved")

T = TypeVar("T")


class RunAborted(EvalyardError):
    """The run stopped early (``--max-errors`` reached); results so far are kept."""

    totals: dict[str, Any] | None = None  # set to the stored totals before it is raised


def fingerprint(data: dict[str, Any]) -> str:
    """A short stable hash of what decides a scorer's or generator's values."""
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class PreparedScorer:
    spec: ScorerSpec
    scorer: Scorer
    entry: Entry
    executor: str
    #: the saved calibration whose threshold this run uses (``evalyard.figures.calibrations.apply_calibrations``)
    calibration: dict[str, Any] | None = None
    #: the saved calibration this run's agreement figures come from (applied or not), and why its
    #: threshold was not applied when --calibrated asked for it
    calibration_used: dict[str, Any] | None = None
    #: how its trials make a case's score in a run with --epochs (``evalyard.analysis.reducers``)
    reducer: Reducer = Reducer()
    #: the steps that read the candidate before this scorer does (``evalyard.extraction``), or None
    extraction: Extraction | None = None

    @property
    def name(self) -> str:
        """The key of this scorer's results in the run: the name the user selected it by."""
        return self.spec.name

    @property
    def threshold(self) -> float | None:
        return self.spec.threshold if self.spec.threshold is not None else self.scorer.threshold

    def pass_value(self, score: Score) -> float | None:
        """The number the pass threshold applies to: the value, or what a calibration was fitted on."""
        if self.calibration is None or self.calibration.get("value", "value") == "value":
            return score.value
        from .analysis.calibration import source_value

        return source_value(self.scorer, score, self.calibration["value"])

    def describe(self) -> dict[str, Any]:
        cls = type(self.scorer)
        identity = {"scorer": self.entry.qualified, **_jsonable(self.scorer.fingerprint_data())}
        if self.extraction is not None:  # the same scorer reading another extraction gives other values
            identity["extract"] = self.extraction.spec
        description = {
            "name": self.name,
            "qualified": self.entry.qualified,
            "plugin": self.entry.plugin,
            "version": cls.version,
            "config": _jsonable(self.scorer.config_dict()),
            "threshold": self.threshold,
            "higher_is_better": cls.higher_is_better,
            "labels": list(cls.labels),
            "executor": self.executor,
            "fingerprint": fingerprint(identity),
            "fingerprint_data": identity,
        }
        if self.extraction is not None:
            description["extract"] = self.extraction.spec
        if self.calibration:
            description["calibration"] = self.calibration
        if self.calibration_used:
            description["calibration_used"] = self.calibration_used
        return description


@dataclass
class PreparedGenerator:
    generator: Generator
    entry: Entry

    def describe(self) -> dict[str, Any]:
        identity = {"generator": self.entry.qualified, **_jsonable(self.generator.fingerprint_data())}
        return {"name": self.entry.qualified, "plugin": self.entry.plugin,
                "config": _jsonable(self.generator.config_dict()),
                "fingerprint": fingerprint(identity), "fingerprint_data": identity}


_PLAIN = (str, int, float, bool, type(None))


def _jsonable(value: Any) -> Any:
    """A JSON-safe copy (tuples to lists, unknown objects to strings) so SQLite and PostgreSQL store the same."""
    if type(value) is dict and all(type(k) is str and (type(v) in _PLAIN or type(v) is list and _plain_list(v))
                                   for k, v in value.items()):
        return value  # already JSON as it is (most scorers' details): skip the round trip
    return json.loads(json.dumps(value, default=str))


def _plain_list(values: list[Any]) -> bool:
    return all(type(v) in _PLAIN for v in values)


def prepare_scorers(specs: list[ScorerSpec], registry: Registry, executor: str | None = None) -> list[PreparedScorer]:
    """Resolve names, check configs and executors; every error names where the scorer was asked for."""
    prepared = []
    seen: set[str] = set()
    for spec in specs:
        where = spec.origin or "scorer"
        if spec.name in seen:
            raise InputError(f"{where}: scorer {spec.name!r} is selected twice")
        seen.add(spec.name)
        config = spec.config
        try:
            entry = registry.scorers.entry(spec.name)
        except UnknownNameError as exc:
            entry, config = _at_cutoff(registry, spec, exc)
        cls = entry.obj
        try:
            scorer = cls(cls.make_config(config))
        except ConfigError as exc:
            raise InputError(f"{where}: bad config for scorer {exc}") from None
        # --executor moves every scorer that is not async (model calls stay on the event loop)
        chosen = canonical_name(cls.executor if (executor is None or cls.executor == "async") else executor)
        if chosen not in registry.executors:
            raise InputError(f"{where}: scorer {spec.name!r} wants executor {chosen!r}, which no plugin registered "
                             f"(known: {', '.join(sorted(e.name for e in registry.executors))})")
        reducer = (parse_reducer(spec.reducer, f"{where}: scorer {spec.name!r}", registry.reducers) if spec.reducer
                   else Reducer())
        # the answer is read for the scorers that read it: `--extract code` for every scorer leaves a
        # retrieval measure or a judge of the context alone, instead of failing them on an unfenced answer
        reads_answer = "candidate" in (*scorer.required_fields(), *cls.reads)
        extraction = (parse_extraction(spec.extract, f"{where}: scorer {spec.name!r}")
                      if spec.extract and reads_answer else None)
        prepared.append(PreparedScorer(spec, scorer, entry, chosen, reducer=reducer, extraction=extraction))
    if not prepared:
        raise InputError("no scorers selected: list them in the suite file or pass --scorer NAME")
    return prepared


def _at_cutoff(registry: Registry, spec: ScorerSpec, unknown: UnknownNameError) -> tuple[Entry, dict[str, Any]]:
    """``recall@10``: the scorer ``recall`` with ``k=10`` (a scorer whose config has a ``k``), its
    results kept under the name as written, so ``recall@5`` and ``recall@10`` share a run."""
    from .scoring import config_field_names

    base, at, k = spec.name.rpartition("@")
    where = spec.origin or "scorer"
    if not (at and base and k.isdigit()):
        raise InputError(f"{where}: {unknown}") from None
    try:
        entry = registry.scorers.entry(base)
    except UnknownNameError as exc:
        raise InputError(f"{where}: {exc}") from None
    if "k" not in config_field_names(entry.obj.Config):
        raise InputError(f"{where}: scorer {base!r} takes no cutoff (NAME@K needs a scorer with a `k` option)")
    if "k" in spec.config:
        raise InputError(f"{where}: {spec.name} gives k twice (@{k} and k={spec.config['k']})")
    return entry, {**spec.config, "k": k}


def prepare_generator(name: str, config: dict[str, Any], registry: Registry) -> PreparedGenerator:
    try:
        entry = registry.generators.entry(name)
    except UnknownNameError as exc:
        raise InputError(f"--generator: {exc}") from None
    if entry.obj.produces != "candidate":
        raise InputError(f"--generator: {name!r} makes a {entry.obj.produces}, not candidates; its plugin's own "
                         f"commands use it (see evalyard --help)")
    try:
        generator = entry.obj(entry.obj.make_config(config))
    except ConfigError as exc:
        raise InputError(f"--generator: bad config for generator {exc}") from None
    return PreparedGenerator(generator, entry)


def check_cases(suite: Suite, prepared: list[PreparedScorer], generator: PreparedGenerator | None = None,
                media: Any = None) -> None:
    """One streaming pass over the suite's cases before anything is stored: every record parses
    (the reader raises on a bad one), ids are unique, every case has the fields the selected
    scorers (and the generator) require, and the suite's version and size are computed on the way.
    Memory is 8 bytes per case (a hash of its id), whatever the cases hold.

    Errors come in the order a whole-file load gave them: a bad record first, then a duplicate
    id, then a missing field; each names the file, the line and the field. A missing candidate
    is fine when a generator will fill it. ``media``: the run's ``MediaGate``, which refuses a case
    whose media the run's model under test or a judge would not see (the first such case)."""
    from array import array

    from .suite import add_to_version, version_digest

    requirements = [(f"scorer {p.name!r}", tuple(p.scorer.required_fields())) for p in prepared]
    if generator is not None:
        requirements.append((f"generator {generator.entry.name!r}", tuple(generator.generator.required_fields())))
    made = set(generator.generator.fills) if generator is not None else set()
    requirements = [(who, tuple(f for f in fields if f not in made or who.startswith("generator")))
                    for who, fields in requirements]
    id_hashes = array("q")
    digest = version_digest()
    missing: InputError | None = None
    count = 0
    for case, origin in suite.iter_cases():
        count += 1
        id_hashes.append(hash(case.id))
        add_to_version(digest, case)
        if media is not None and missing is None and (case.input_parts is not None or case.messages):
            try:
                media.check(case, origin)
            except InputError as exc:
                missing = exc
        if missing is None:
            for who, fields in requirements:
                absent = next((f for f in fields if not case.has(f)), None)
                if absent is not None:
                    path, line = _split_origin(origin)
                    missing = InputError(f"case {case.id!r} has no {absent}, which {who} requires",
                                         path=path, line=line, field=absent)
                    break
    if count == 0:
        raise InputError("the suite has no cases", path=suite.source or suite.name)
    suspects = _shared_hashes(id_hashes)
    if suspects:
        _raise_duplicate(suite, suspects)
    if missing is not None:
        raise missing
    suite.remember(digest.hexdigest()[:16], count)


def _split_origin(origin: str) -> tuple[str, int | None]:
    path, _, line = origin.rpartition(":")
    if not line.isdigit():
        return origin, None
    return path, int(line)


def _shared_hashes(values) -> set[int]:
    """The id hashes that occur more than once (one sort of a copy of the 8-byte hashes)."""
    import numpy as np

    ordered = np.frombuffer(values, dtype=np.int64).copy()
    ordered.sort()
    return set(ordered[1:][ordered[1:] == ordered[:-1]].tolist())


def _raise_duplicate(suite: Suite, suspects: set[int]) -> None:
    """Some ids share a hash: read again, keeping only those, to name the first true duplicate."""
    seen: dict[str, str] = {}
    for case, origin in suite.iter_cases():
        if hash(case.id) not in suspects:
            continue
        if case.id in seen:
            path, line = _split_origin(origin)
            raise InputError(f"duplicate case id {case.id!r} (first at {seen[case.id]})", path=path, line=line,
                             field="id")
        seen[case.id] = origin


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


def run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from sync code, on the process's one background loop.

    One loop for the whole process, whoever calls (a script, a notebook with its own running
    loop, a test): model clients (litellm) bind their connections and workers to the loop they
    first run on. Ctrl-C in the caller cancels the run's tasks, waits for them to unwind (each
    stage cleans up in ``finally``), then propagates.
    """
    from concurrent.futures import CancelledError

    from .models.background import shared_loop

    future = shared_loop().submit(make())
    try:
        return future.result()
    except KeyboardInterrupt:
        future.cancel()
        try:
            future.result(timeout=30)
        except (CancelledError, Exception):
            pass
        raise


class Runner:
    """Runs the stages of one run against a store. ``concurrency`` is the run's one budget
    (``evalyard.executors.Budget``, owned here and lent to the executors): requests at once for
    async scorers and generators, workers for the others.

    Every stage streams: cases come from the database a window at a time (``WINDOW``), at most
    ``in_flight`` batches (or generations) are pending at once, and each finished batch is
    written and dropped, so a run's memory is set by the window, never by its size."""

    def __init__(self, store, registry: Registry, *, concurrency: int = 4, max_errors: int | None = None,
                 on_progress: Callable[[int], None] | None = None, runtime=None,
                 previous_usage: dict[str, Any] | None = None, epochs: int = 1) -> None:
        self.store = store
        #: trials per case (``--epochs``): each generated and scored, then reduced per scorer
        self.epochs = max(1, int(epochs))
        self.runtime = runtime
        self.previous_usage = previous_usage
        self.registry = registry
        self.budget = Budget(concurrency)
        self.max_errors = max_errors
        self.on_progress = on_progress or (lambda n: None)
        self.errors = 0
        self._executors: dict[str, Any] = {}

    @property
    def concurrency(self) -> int:
        return self.budget.concurrency

    @property
    def in_flight(self) -> int:
        return self.budget.in_flight

    # -- set-up ----------------------------------------------------------
    def executor(self, name: str):
        name = canonical_name(name)  # a run stored before the rename says inline
        if name not in self._executors:
            made = self.registry.executors.get(name)(self.concurrency)
            bind = getattr(made, "bind", None)
            if bind is not None:  # the run's budget and runtime, for executors that use them
                bind(self.budget, self.runtime)
            self._executors[name] = made
        return self._executors[name]

    def check_executors(self, prepared: list[PreparedScorer]) -> None:
        """Refuse, before anything is stored, a scorer its executor cannot run."""
        for p in prepared:
            self.executor(p.executor).check(p.scorer)

    def create(self, suite: Suite, prepared: list[PreparedScorer], *, generator: PreparedGenerator | None = None,
               name: str = "", source: str = "", plugin_versions: dict[str, str | None] | None = None,
               settings: dict[str, Any] | None = None) -> str:
        """The run's row (its cases are stored by the first stage of ``execute``)."""
        suite_id = self.store.suite_id(suite.name, suite.version, description=suite.description, source=suite.source,
                                       case_count=suite.case_count)
        used = {p.entry.plugin for p in prepared} | ({generator.entry.plugin} if generator else set())
        versions = {
            "evalyard": __version__,
            "plugins": {name: version for name, version in (plugin_versions or {}).items() if name in used},
            "python": _python_version(),
        }
        return self.store.create_run(
            suite_id, None, name=name, scorers=[self._described(p) for p in prepared], versions=versions,
            source=source or suite.source, generator=generator.describe() if generator else None, settings=settings,
        )

    def _described(self, p: PreparedScorer) -> dict[str, Any]:
        if self.epochs == 1:
            return p.describe()
        return {**p.describe(), "reducer": p.reducer.spec}

    # -- the stages --------------------------------------------------------
    def execute(self, run_id: str, prepared: list[PreparedScorer], generator: PreparedGenerator | None = None,
                suite: Suite | None = None) -> dict[str, Any]:
        """Run every stage's remaining work for ``run_id``; returns the run's totals. ``suite``:
        the cases to store first (a new run, or one stopped before all its cases were stored)."""
        started = time.perf_counter()
        self.store.set_status(run_id, "running")
        run = self.store.get_run(run_id)
        try:
            try:
                windows = None
                if suite is not None and self.store.candidate_count(run_id) < suite.case_count:
                    if generator is None:  # stored as they are scored: one pass over the data, not two
                        windows = self._stored_windows(run, suite)
                    else:  # generating reads the stored cases whose candidate is missing
                        self._store_cases(run, suite)
                run_sync(lambda: self._stages(run_id, run.suite_id, prepared, generator, windows))
            except StopRun as stop:
                raise RunAborted(f"stopped: {stop}") from stop
        except KeyboardInterrupt:
            self.store.set_status(run_id, "interrupted")
            raise
        except RunAborted as exc:
            exc.totals = self.totals(run_id, prepared, time.perf_counter() - started)
            self.store.set_status(run_id, "failed", exc.totals)
            raise
        except Exception:  # a defect somewhere below: the run is failed (and resumable), never left running
            self.store.set_status(run_id, "failed")
            raise
        finally:
            for p in prepared:
                p.scorer.close()
            if generator is not None:
                generator.generator.close()
            for executor in self._executors.values():
                executor.close()
            if self.runtime is not None:
                self.runtime.close()
        totals = self.totals(run_id, prepared, time.perf_counter() - started, generator)
        self.store.set_status(run_id, "completed", totals)
        return totals

    def _store_cases(self, run, suite: Suite) -> None:
        """Stage 0: the suite's cases (if no run stored them yet) and this run's candidates, a
        chunk per transaction, in one pass over the data. Rows stored before are kept as they are."""
        if self.store.candidate_count(run.id) >= suite.case_count:
            return
        suite_cases = self.store.stored_case_count(run.suite_id) < suite.case_count
        self.store.store_cases(run.suite_id, run.id, suite.iter_cases(), suite_cases=suite_cases)

    def _stored_windows(self, run, suite: Suite) -> Iterator[list[Case]]:
        """Stage 0 as the score stage reads it: each window of the data is stored (the suite's
        cases, if no run stored them yet, and this run's candidates) and then handed on. A run
        stopped part-way has stored a prefix of its cases, which a resume completes."""
        from .store import chunked

        suite_cases = self.store.stored_case_count(run.suite_id) < suite.case_count
        position = 0
        for chunk in chunked(suite.iter_cases(), WINDOW):
            self.store.store_cases(run.suite_id, run.id, chunk, suite_cases=suite_cases, first_position=position)
            position += len(chunk)
            yield [case for case, _ in chunk]

    async def _stages(self, run_id: str, suite_id: int, prepared: list[PreparedScorer],
                      generator: PreparedGenerator | None, windows: Iterator[list[Case]] | None = None) -> None:
        if generator is not None:
            if self.epochs > 1:
                await self._generate_epochs(run_id, suite_id, generator)
            else:
                await self._generate(run_id, suite_id, generator)
        await self._score(run_id, suite_id, prepared, windows, with_outputs=generator is not None)

    async def _bounded(self, jobs, finish: Callable[[Any], None]) -> None:
        """Await coroutines from ``jobs`` with at most ``in_flight`` pending, handing each result
        to ``finish`` as it completes (those that complete together in the order they were
        started); whatever is pending when this stops is cancelled."""
        pending: dict[asyncio.Future, int] = {}

        async def settle(until: int) -> None:
            while len(pending) > until:
                finished, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in sorted(finished, key=pending.__getitem__):
                    del pending[task]
                    finish(task.result())

        jobs = iter(jobs)
        started = 0
        try:
            while True:
                await settle(self.in_flight - 1)  # before the next job is made: a stop leaves none unawaited
                job = next(jobs, None)
                if job is None:
                    break
                pending[asyncio.ensure_future(job)] = started
                started += 1
            await settle(0)
        finally:
            for task in pending:
                task.cancel()

    async def _generate_one(self, generator: PreparedGenerator, case: Case) -> dict[str, Any]:
        async with self.budget.requests:
            try:
                with trial(case.epoch):  # its model calls are this epoch's (own cache key, seed)
                    made = await generator.generator.agenerate(case)
            except StopRun:
                raise
            except Exception as exc:  # a failed generation is recorded, never an empty candidate
                made = Generation(error=Score.failure(exc).error)
        if isinstance(made, str):
            made = Generation(text=made)
        if not isinstance(made, Generation) or (made.text is None and made.error is None):
            made = Generation(error=f"generator {generator.entry.name!r} returned {type(made).__name__}")
        details = _jsonable({**made.details, "usage": made.usage} if made.usage else made.details)
        # what the system produced besides its answer (a conversation, a retrieval), which replaces
        # the case's own fields for scoring
        generated = {name: _jsonable(getattr(made, name)) for name in GENERATED_FIELDS
                     if getattr(made, name) is not None}
        row = {"case_id": case.id, "text": made.text, "details": details or None, "error": made.error,
               "dialogue": generated or None}
        if case.epoch is not None:
            row["epoch"] = case.epoch
        return row

    async def _generate(self, run_id: str, suite_id: int, generator: PreparedGenerator) -> None:
        windows = self.store.iter_run_cases(run_id, suite_id, missing_candidates=True)
        jobs = (self._generate_one(generator, case) for window in windows for case in window)
        await self._written_in_chunks(jobs, lambda rows: self.store.write_candidates(run_id, rows))

    async def _generate_epochs(self, run_id: str, suite_id: int, generator: PreparedGenerator) -> None:
        """Every (case, epoch) without an output gets one: epochs are separate samples. A case whose
        data holds its candidate (no output generated for it) keeps that candidate in every epoch."""
        from .store.trials import done_outputs, write_outputs

        def jobs():
            for window in self.store.iter_run_cases(run_id, suite_id, window=WINDOW):
                done = done_outputs(self.store, run_id, [c.id for c in window])
                started = {case_id for case_id, _ in done}
                for case in window:
                    if case.candidate is not None and case.id not in started:
                        continue
                    for epoch in range(self.epochs):
                        if (case.id, epoch) not in done:
                            yield self._generate_one(generator, dataclasses.replace(case, epoch=epoch))

        await self._written_in_chunks(jobs(), lambda rows: write_outputs(self.store, run_id, rows))

    async def _written_in_chunks(self, jobs, write: Callable[[list[dict[str, Any]]], None]) -> None:
        """Generations stored ``GENERATED_CHUNK`` at a time (or what arrived in ``GENERATED_EVERY_S``),
        and what is left when the stage ends or stops. A generation's answer is in the response cache as soon as it arrives, so the few a
        kill -9 loses from the chunk come back from the cache on resume, not from the provider;
        a transaction per generation cost the event loop half a millisecond each."""
        chunk: list[dict[str, Any]] = []
        flushed = [time.monotonic()]

        def add(row: dict[str, Any]) -> None:
            chunk.append(row)
            now = time.monotonic()
            if len(chunk) >= GENERATED_CHUNK or now - flushed[0] >= GENERATED_EVERY_S:  # slow models: still seen
                write(chunk[:])
                chunk.clear()
                flushed[0] = now

        try:
            await self._bounded(jobs, add)
        finally:
            if chunk:
                write(chunk)

    def _batches(self, run_id: str, suite_id: int, prepared: list[PreparedScorer],
                 windows: Iterator[list[Case]] | None = None):
        """(scorer, cases) batches of every pair still without a result, in suite order, each
        scorer's cases gathered to full batches across windows (of the stored cases, or of the
        data as ``_stored_windows`` stores it)."""
        fresh = self.store.result_count(run_id) == 0  # nothing to look up for a run just started
        sizes = {p.name: max(1, min(p.spec.batch_size or p.scorer.batch_size, MAX_BATCH)) for p in prepared}
        waiting: dict[str, list[Case]] = {p.name: [] for p in prepared}
        for window in windows if windows is not None else self.store.iter_run_cases(run_id, suite_id, window=WINDOW):
            done = set() if fresh else self.store.done_pairs(run_id, [c.id for c in window])
            for p in prepared:
                todo = waiting[p.name]
                todo.extend(c for c in window if (c.id, p.name) not in done)
                while len(todo) >= sizes[p.name]:
                    yield p, todo[:sizes[p.name]]
                    del todo[:sizes[p.name]]
        for p in prepared:
            if waiting[p.name]:
                yield p, waiting[p.name]

    def _trials(self, run_id: str, batch: list[Case], with_outputs: bool) -> list[Case]:
        """Each case of ``batch`` once per epoch, case by case (its epochs together): with the
        epoch's own generated output when the run generates, else the case's candidate."""
        outputs = {}
        if with_outputs:
            from .store.trials import outputs_of

            outputs = outputs_of(self.store, run_id, [c.id for c in batch])
        out = []
        for case in batch:
            for epoch in range(self.epochs):
                # a case that was generated has an output row per epoch (its text, or None and the
                # error; a generated conversation, its messages; a pipeline's retrieval, its passages)
                candidate, _, dialogue = outputs.get((case.id, epoch), (case.candidate, None, None))
                generated = {name: dialogue[name] for name in GENERATED_FIELDS if name in (dialogue or {})}
                out.append(dataclasses.replace(case, candidate=candidate, epoch=epoch, **generated_context(generated)))
        return out

    async def _score(self, run_id: str, suite_id: int, prepared: list[PreparedScorer],
                     windows: Iterator[list[Case]] | None = None, with_outputs: bool = False) -> None:
        async def run_batch(p: PreparedScorer, batch: list[Case]):
            if self.epochs > 1:
                batch = self._trials(run_id, batch, with_outputs)
            t0 = time.perf_counter()
            # A case whose candidate could not be generated cannot be scored on it: an error, not a 0.
            # Scores go back to their trials by position: with epochs a case id names several trials.
            # In a run that generates, a case without a candidate is one whose generation failed: a
            # scorer of what the system produced (its answer, its conversation) cannot score it.
            required = p.scorer.required_fields()
            read = (*required, *getattr(p.scorer, "reads", ()))
            reads_generated = "candidate" in required or (with_outputs and any(f in read for f in GENERATED_FIELDS))
            unread = self._read_answers(p, batch)  # the answers as the user reads them
            runnable_at = [i for i, c in enumerate(batch)
                           if i not in unread and (c.candidate is not None or not reads_generated)]
            runnable = [batch[i] for i in runnable_at]
            stop = None
            try:
                scores = await self.executor(p.executor).score_batch(p.scorer, runnable) if runnable else []
                if len(scores) != len(runnable):
                    raise RuntimeError(f"returned {len(scores)} scores for {len(runnable)} cases")
            except BatchStopped as stopped:  # keep the cases that finished before the stop
                scores, stop = stopped.scores, stopped.stop
            except StopRun:
                raise
            except Exception as exc:  # a whole batch failed: record it for every case
                scores = [Score.failure(exc) for _ in runnable]
            if len(runnable) == len(batch) and stop is None:
                return p, batch, scores, time.perf_counter() - t0, None
            at = dict(zip(runnable_at, scores))  # after a stop, some runnable trials have no score yet
            unscorable = set(range(len(batch))) - set(runnable_at)
            ordered = [unread[i] if i in unread else Score.failure("no candidate: its generation failed")
                       if i in unscorable else at.get(i) for i in range(len(batch))]
            if stop is not None:  # only what finished: a case cut short is scored again on resume
                kept = [(c, s) for c, s in zip(batch, ordered) if s is not None]
                return p, [c for c, _ in kept], [s for _, s in kept], time.perf_counter() - t0, stop
            return p, batch, ordered, time.perf_counter() - t0, None

        def finish(outcome) -> None:
            p, batch, scores, elapsed, stop = outcome
            self._record(run_id, p, batch, scores, elapsed)
            self.on_progress(len(batch))
            if stop is not None:
                raise stop
            if self.max_errors is not None and self.errors > self.max_errors:
                raise RunAborted(f"stopped after {self.errors} errors (--max-errors {self.max_errors})")

        jobs = (run_batch(p, batch) for p, batch in self._batches(run_id, suite_id, prepared, windows))
        await self._bounded(jobs, finish)

    @staticmethod
    def _read_answers(p: PreparedScorer, batch: list[Case]) -> dict[int, Score]:
        """Each candidate of ``batch`` replaced, in place, by what ``p``'s extraction reads in it;
        the positions where it finds nothing, with that case's error (never an empty answer)."""
        if p.extraction is None:
            return {}
        unread = {}
        for i, case in enumerate(batch):
            if case.candidate is None:
                continue
            try:
                batch[i] = dataclasses.replace(case, candidate=p.extraction(case.candidate))
            except ExtractionFailed as exc:
                unread[i] = Score.failure(str(exc))
        return unread

    def _record(self, run_id: str, p: PreparedScorer, batch: list[Case], scores: list[Any], elapsed: float) -> None:
        per_case_ms = elapsed * 1000 / max(1, len(batch))
        rows = []
        for case, raw in zip(batch, scores):
            score = self._judged(p, _checked(raw, p.name))
            if p.extraction is not None and score.error is None and case.candidate is not None:
                score.details = {**(score.details or {}), "extracted": case.candidate}  # beside the raw answer
            if score.error is not None:
                self.errors += 1
            rows.append({
                "case_id": case.id, "scorer": p.name, "value": score.value, "label": score.label,
                "passed": score.passed, "details": _jsonable(score.details or {}), "error": score.error,
                "usage": _jsonable(score.usage) if score.usage else None, "duration_ms": per_case_ms,
            })
        if self.epochs == 1:
            self.store.write_results(run_id, rows)
            return
        from .store.trials import write_scored

        from itertools import groupby

        results, trials = [], []
        epochs = (case.epoch for case in batch)
        for _, group in groupby(zip(rows, epochs), key=lambda pair: pair[0]["case_id"]):  # a case's epochs, in order
            case_trials = list(group)
            if len(case_trials) < self.epochs:  # a stop cut the case short: all of it is scored again on resume
                continue
            for row, epoch in case_trials:
                trials.append({k: row[k] for k in ("case_id", "scorer", "value", "label", "passed", "details",
                                                   "error", "usage")} | {"epoch": epoch})
            results.append(self._reduced(p, [row for row, _ in case_trials], per_case_ms * len(case_trials)))
        write_scored(self.store, run_id, results, trials)

    def _judged(self, p: PreparedScorer, score: Score) -> Score:
        """The score with its pass/fail from the threshold (a threshold the user set wins over the
        scorer's own verdict)."""
        threshold = p.threshold
        value = p.pass_value(score)
        if score.error is None and value is not None and threshold is not None and (
                score.passed is None or p.spec.threshold is not None):
            higher = type(p.scorer).higher_is_better
            score.passed = value >= threshold if higher else value <= threshold
        return score

    def _reduced(self, p: PreparedScorer, case_trials: list[dict[str, Any]], duration_ms: float) -> dict[str, Any]:
        """A case's result from its trials' rows: the reducer's value, the threshold applied to it."""
        reduced = p.reducer([Trial(r["value"], r["label"], r["passed"], r["error"]) for r in case_trials])
        if reduced.error is not None:
            score = Score.failure(reduced.error)
        else:
            score = self._judged(p, Score(value=reduced.value, label=reduced.label, passed=reduced.passed))
        scored = sum(1 for r in case_trials if r["error"] is None)
        usage = merge_usage_rows([r["usage"] for r in case_trials])
        return {"case_id": case_trials[0]["case_id"], "scorer": p.name, "value": score.value, "label": score.label,
                "passed": score.passed, "error": score.error, "usage": usage, "duration_ms": duration_ms,
                "details": {"reducer": p.reducer.spec, "epochs": len(case_trials), "scored_epochs": scored,
                            "values": [r["value"] if r["value"] is not None else r["label"] for r in case_trials]}}

    def totals(self, run_id: str, prepared: list[PreparedScorer], elapsed: float,
               generator: PreparedGenerator | None = None) -> dict[str, Any]:
        """Summary statistics and corpus-level metrics per scorer (the aggregate stage), each
        from one streaming pass over the scorer's stored results."""
        scorers = {}
        for p in prepared:
            summary = self.store.summary(run_id, p.name)
            if self.epochs > 1:
                summary["epochs"] = {"n": self.epochs, "reducer": p.reducer.spec, **self._stability(run_id, p)}
            summary["aggregate"], error = self._aggregate(run_id, p)
            if error:
                summary["aggregate_error"] = error
            scorers[p.name] = summary
        totals: dict[str, Any] = {"duration_s": round(elapsed, 3), "scorers": scorers}
        usage = merge_usage(self.previous_usage, self.runtime.usage() if self.runtime is not None else None)
        if usage is not None:
            totals["usage"] = usage
        if generator is not None:
            totals["generation"] = self.store.generation_counts(run_id)
        return totals

    def _stability(self, run_id: str, p: PreparedScorer) -> dict[str, Any]:
        from .analysis.reducers import stability
        from .store.trials import trials_by_case

        return stability([Trial(v, lb, ok, e) for _, v, lb, ok, e in rows]
                         for _, rows in trials_by_case(self.store, run_id, p.name))

    def _aggregate(self, run_id: str, p: PreparedScorer) -> tuple[dict[str, float], str | None]:
        if type(p.scorer).aggregate is Scorer.aggregate:
            return {}, None
        try:
            # ``aggregate`` receives every Score of the scorer in a list: the one place a run holds
            # all of one scorer's results (only scorers with corpus-level metrics have it).
            metrics = p.scorer.aggregate(self.store.scores(run_id, p.name))
            clean = {}
            for key, value in dict(metrics).items():
                number = float(value)
                if math.isnan(number):
                    raise ValueError(f"metric {key!r} is NaN")
                clean[str(key)] = number
            return clean, None
        except Exception as exc:  # recorded with the run, like a scorer error: never a fake number
            return {}, Score.failure(exc).error


def merge_usage_rows(usages: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """A case's usage over its trials: the numbers added (a key absent from one trial counts 0)."""
    kept = [u for u in usages if u]
    if not kept:
        return None
    total: dict[str, Any] = {}
    for usage in kept:
        for key, value in usage.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value
    return total


def merge_usage(before: dict[str, Any] | None, now: dict[str, Any] | None) -> dict[str, Any] | None:
    """A resumed run's usage: what earlier sessions spent plus this one (numbers added; a cost
    unknown in either stays unknown only if nothing was priced)."""
    if not before or not now:
        return now or before
    out = dict(now)
    for key, value in before.items():
        if key in ("cost", "max_cost", "by_model"):
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool) and isinstance(now.get(key), (int, float)):
            out[key] = now[key] + value
    costs = [c for c in (before.get("cost"), now.get("cost")) if c is not None]
    out["cost"] = sum(costs) if costs else None
    out["cost_complete"] = bool(before.get("cost_complete", True) and now.get("cost_complete", True))
    by_model = {k: dict(v) for k, v in (before.get("by_model") or {}).items()}
    for model, numbers in (now.get("by_model") or {}).items():
        merged = by_model.setdefault(model, {})
        for key, value in numbers.items():
            merged[key] = merged.get(key, 0) + value if isinstance(value, (int, float)) else value
    out["by_model"] = by_model
    return out


def _python_version() -> str:
    import platform

    return platform.python_version()
