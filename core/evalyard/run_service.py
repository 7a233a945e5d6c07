"""One way to run: a :class:`RunRequest` says what to run and what to do with the outcome, and
``Application.run(request)`` does all of it: resolve the run (or the run it resumes), forecast
its cost when asked (``--plan``) or capped (``--max-cost``), execute or resume it, then apply the
checks (``--fail-under``, the error share), the clustered intervals, the judges' agreement with
people and the outputs (sinks). The CLI, ``evalyard.evaluate`` and the pytest plugin only build
requests and present a :class:`RunOutcome`; an experiment is a set of requests.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .errors import InputError

if TYPE_CHECKING:  # the application calls into this module; this module sees it as a RunApplication
    from .registry import Registry
    from .run_contract import RunApplication, RunResult
    from .settings import Settings
    from .store import Store


@dataclass
class RunRequest:
    """Everything a run needs, as the user said it (nothing resolved yet).

    ``suite``: a suite or data file path, a ``Suite`` or a list of cases; None with ``resume``
    alone. ``scorers``: names with config (``"exact_match:case_sensitive=false"``), specs or
    Scorer classes; None for the suite's own. ``outputs``: ``(format name, target or None)``
    pairs, written after the run (``run --output``). ``forecast_only``: say what the run would
    take and run nothing (``--plan``)."""

    suite: Any = None
    scorers: Sequence[Any] | None = None
    resume: str | None = None
    name: str = ""
    db: str | None = None
    generator: str | None = None
    generator_config: dict[str, Any] = field(default_factory=dict)
    judge_model: str | None = None
    use_cache: bool = True
    max_cost: float | None = None
    run_to_cap: bool = False
    concurrency: int = 4
    executor: str | None = None
    format: str | None = None
    field_map: dict[str, str] | None = None
    batch: bool = False
    calibrated: bool = False
    max_errors: int | None = None
    fail_under: Sequence[tuple[str, float]] = ()
    fail_on_error: float | None = None
    cluster: str | None = None
    outputs: Sequence[tuple[str, str | None]] = ()
    forecast_only: bool = False
    #: trials per case (``--epochs``; None: the suite's ``epochs:``, else 1)
    epochs: int | None = None
    #: ``(scorer name or None for every scorer, reducer spec)`` pairs (``--reducer``)
    reducers: Sequence[tuple[str | None, str]] = ()
    #: ``(scorer name or None for every scorer, extraction step)`` pairs (``--extract``), in order
    extracts: Sequence[tuple[str | None, str]] = ()
    #: relevance judgements (TREC qrels or JSON) filling the cases' ``relevant`` (``--qrels``)
    qrels: str | None = None
    #: pass media given by http(s) URL on to the models (``--allow-remote-media``); refused otherwise
    allow_remote_media: bool = False
    on_progress: Callable[[int], None] | None = None
    #: called with (run id, results to make) once the run exists (a new run) or is found (a resume)
    on_start: Callable[[str, int], None] | None = None

    def check(self) -> None:
        """Refuse a request that contradicts itself, before anything is read or stored."""
        if self.resume and self.suite is None and (
                self.scorers or self.generator or self.generator_config or self.max_cost is not None
                or self.format or self.field_map or self.batch or self.calibrated or self.qrels):
            raise InputError("--resume RUN_ID continues a run with its own suite, scorers, generator and limits: "
                             "give the run id alone, or repeat the run's whole command (SUITE and its options) "
                             "with --resume")
        if not self.resume and self.suite is None:
            raise InputError("give a SUITE file, or --resume RUN_ID")
        if self.run_to_cap and self.max_cost is None:
            raise InputError("--run-to-cap runs up to --max-cost USD: give the cap too")
        if self.cluster:
            from .analysis.clustering import parse_cluster

            parse_cluster(self.cluster)  # a malformed option fails before the run, not after it
        if self.epochs is not None and self.epochs < 1:
            raise InputError(f"--epochs {self.epochs}: give 1 or more")
        if self.resume and self.suite is None and (self.epochs or self.reducers or self.extracts):
            raise InputError("--resume RUN_ID keeps the run's own epochs, reducers and extraction")


@dataclass
class RunOutcome:
    """What ``Application.run`` did. ``result`` is None when nothing ran: a forecast
    (``forecast_only``) or a run refused for its forecast cost (``refused``)."""

    result: "RunResult | None" = None
    forecast: dict[str, Any] | None = None
    forecast_only: bool = False
    max_cost: float | None = None
    refused: bool = False
    failed_checks: list[dict[str, Any]] = field(default_factory=list)
    error_share: float = 0.0
    fail_on_error: float | None = None
    agreement: dict[str, Any] = field(default_factory=dict)
    clustered: dict[str, Any] | None = None
    #: one-line warnings to show (an output endpoint that failed, a cost not fully known)
    warnings: list[str] = field(default_factory=list)
    #: (format name, where it was written) for each output
    written: list[tuple[str, str | None]] = field(default_factory=list)

    @property
    def too_many_errors(self) -> bool:
        if self.result is None:
            return False
        share = self.error_share
        return share > self.fail_on_error if self.fail_on_error is not None else share == 1.0

    @property
    def failed(self) -> bool:
        """Exit code 1: a check failed, too many errors, a run stopped early, or a forecast over the cap."""
        if self.result is None:
            return self.refused
        return bool(self.failed_checks or self.result.error or self.too_many_errors)

    def to_dict(self) -> dict[str, Any]:
        """``run --json``'s object (the run's summary, with agreements, checks and clustered figures)."""
        if self.result is None:
            return {"plan": self.forecast}
        data = self.result.to_dict()
        for name, view in self.agreement.items():
            data["scorers"][name]["agreement"] = view
        data["failed_checks"] = self.failed_checks
        data["error_share"] = self.error_share
        for name, view in (self.clustered or {}).items():
            data["scorers"][name]["clustered"] = view
        if self.written:
            data["outputs"] = [{"format": name, "target": target} for name, target in self.written]
        return data


def execute_request(app: "RunApplication", request: RunRequest) -> RunOutcome:
    """``Application.run``: see the module's docstring."""
    request.check()
    outputs = _resolve_outputs(app.registry, request.outputs)
    plan = None
    if request.suite is not None:
        plan = _plan(app, request)
        _check_fail_under(request.fail_under, plan.scorer_names)
    outcome = RunOutcome(fail_on_error=request.fail_on_error, forecast_only=request.forecast_only,
                         max_cost=request.max_cost)
    if request.forecast_only or (request.max_cost is not None and not request.run_to_cap):
        try:
            outcome.forecast = app.forecast(plan, db=request.db, concurrency=request.concurrency,
                                            resume=request.resume, executor=request.executor)
        except BaseException:
            if plan is not None:
                plan.close()
            raise
        over = _over_cap(outcome.forecast, request.max_cost)
        if request.forecast_only or over:
            if plan is not None:
                plan.close()
            if request.max_cost is not None and request.forecast_only:
                outcome.forecast["max_cost"] = {"cap": request.max_cost, "planned": _planned_cost(outcome.forecast),
                                                "exceeds": over}
            outcome.refused = over
            return outcome
        if not _cost_known(outcome.forecast):  # said at once: the run may be long
            import logging

            logging.getLogger("evalyard").warning(
                "evalyard: the plan's cost is not fully known (a model without a price): --max-cost stops the run "
                "once what is known reaches it")
    if request.resume:
        if plan is not None:  # the same command again, with --resume: it must describe that run
            app.check_resumable_as(request.resume, plan, request.db)
        if request.on_start is not None:
            request.on_start(request.resume, app.pending_count(request.resume, request.db))
        result = app.resume(request.resume, db=request.db, concurrency=request.concurrency,
                            max_errors=request.max_errors, on_progress=request.on_progress,
                            executor=request.executor, suite=plan.suite if plan is not None else None)
    else:
        result = app.execute(plan, db=request.db, concurrency=request.concurrency, max_errors=request.max_errors,
                             on_progress=request.on_progress, on_start=request.on_start)
    outcome.result = result
    _check_fail_under(request.fail_under, list(result.scorers))  # a resumed run's scorers are known only now
    _after_run(app.open_store(request.db), app.settings, request, outcome, plan, outputs)
    return outcome


def stored_outcome(app: "RunApplication", run_id: str, request: RunRequest) -> RunOutcome:
    """The outcome of a run that is already complete (an experiment's finished cell, resumed):
    its stored summary, with the request's checks and the judges' agreements, nothing run."""
    outcome = RunOutcome(result=app.stored_result(run_id, request.db), fail_on_error=request.fail_on_error)
    _after_run(app.open_store(request.db), app.settings, dataclasses.replace(request, outputs=()), outcome, None, [])
    return outcome


def _plan(app: "RunApplication", request: RunRequest):
    scorers, generator, generator_config = request.scorers, request.generator, request.generator_config
    default_scorers = None
    if request.resume and not scorers:
        # `run DATA --resume RUN`: a data file names no scorers, so the run's own are meant; a suite
        # that names its own keeps them, and check_resumable_as then names any difference
        row = app.open_store(request.db).get_run(request.resume)
        from .suite import ScorerSpec

        default_scorers = [ScorerSpec(s["name"], s.get("config") or {}, s.get("threshold"),
                                      origin=f"run {row.id}") for s in row.scorers]
        if generator is None and row.generator:
            generator, generator_config = row.generator["name"], row.generator.get("config") or {}
    return app.plan(request.suite, scorers or None, name=request.name, executor=request.executor,
                    generator=generator, generator_config=generator_config, judge_model=request.judge_model,
                    use_cache=request.use_cache, max_cost=request.max_cost, concurrency=request.concurrency,
                    format=request.format, field_map=request.field_map, batch=request.batch,
                    calibrated=request.calibrated, default_scorers=default_scorers, epochs=request.epochs,
                    reducers=request.reducers, extracts=request.extracts, qrels=request.qrels,
                    allow_remote_media=request.allow_remote_media)


def _after_run(store: "Store", settings: "Settings", request: RunRequest, outcome: RunOutcome, plan,
               outputs) -> None:
    """The checks, clustered intervals, judge agreements and outputs of a finished (or stopped) run."""
    from .figures.calibrations import agreements
    from .outputs import RunSource, write_output

    result = outcome.result
    for scorer_name, minimum in request.fail_under:
        mean = result.scorers[scorer_name]["mean"]
        if mean is None or mean < minimum:
            outcome.failed_checks.append({"scorer": scorer_name, "minimum": minimum, "mean": mean})
    outcome.error_share = result.error_share
    run = store.get_run(result.run_id)
    outcome.agreement = agreements(store, run.scorers)
    cluster = request.cluster or (plan.suite.cluster if plan is not None else None)  # a suite's `cluster:`
    if cluster:
        from .figures.clusters import cluster_run

        outcome.clustered = cluster_run(store, result.run_id, cluster)
    source = RunSource(store, run, settings)
    for output, target in outputs:
        written_to = output.target_for(run.id, target)
        warning = write_output(output, source, target)
        outcome.written.append((output.name, written_to))
        if warning:
            outcome.warnings.append(warning)


def _resolve_outputs(registry: "Registry", wanted: Sequence[tuple[str, str | None]]) -> list:
    """The registered output formats asked for, each checked (its library installed) before the run."""
    found = []
    for name, target in wanted:
        output = registry.outputs.get(name)
        if output.check is not None:
            output.check()
        found.append((output, target))
    return found


def _check_fail_under(checks: Sequence[tuple[str, float]], names: Sequence[str]) -> None:
    unknown = [n for n, _ in checks if n not in names]
    if unknown:
        raise InputError(f"--fail-under {unknown[0]}: scorer is not part of this run")


def _cost_key(forecast: dict[str, Any]) -> str:
    return "batch_cost" if forecast["batch"] else "cost"


def _planned_cost(forecast: dict[str, Any]) -> float | None:
    return forecast["totals"][_cost_key(forecast)]


def _cost_known(forecast: dict[str, Any]) -> bool:
    key = _cost_key(forecast)
    return forecast["totals"][key] is not None and bool(forecast["totals"][key + "_complete"])


def _over_cap(forecast: dict[str, Any], max_cost: float | None) -> bool:
    planned = _planned_cost(forecast)
    return max_cost is not None and planned is not None and planned > max_cost
