"""The Python API: ``evalyard.evaluate``, ``resume`` and ``compare``.

Each call uses the application you pass (``app=``), or a fresh one configured from the
environment (``EVALYARD_HOME``, ``EVALYARD_DB``, plugin variables), exactly as the CLI is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Sequence

if TYPE_CHECKING:
    from .app import Application
    from .run_contract import RunResult
    from .experiments import ExperimentOutcome


def _app(app: "Application | None") -> "Application":
    if app is not None:
        return app
    from .app import Application

    return Application()


def evaluate(suite: Any, scorers: Iterable[Any] | None = None, *, db: str | None = None, name: str = "",
             app: "Application | None" = None, otel: bool | str = False,
             **options: Any) -> "RunResult | ExperimentOutcome":
    """Score ``suite`` (a YAML/JSONL/JSON/CSV path, a ``Suite``, or a list of cases or dicts) with
    ``scorers`` (names like ``"exact_match"`` or ``"exact_match:case_sensitive=false"``; default:
    the suite's own) and keep the run in ``db`` (default: the data directory's SQLite file).

    Options: those of ``evalyard.RunRequest`` (``concurrency``, ``max_errors``, ``executor``,
    ``generator``, ``generator_config``, ``judge_model``, ``format`` (a data format by name),
    ``field_map`` (``{"reference": "gold"}``), ``batch``, ``calibrated``, ``max_cost``,
    ``cluster``, ``outputs`` (``[("junit", "out.xml")]``), ``on_progress``...), as ``evalyard run``
    takes them. Returns a ``RunResult`` (``run_id``, ``summary``, ``results``).

    ``otel=True`` then sends the run to OpenTelemetry as ``evalyard run --otel`` does (the
    settings' endpoint; ``otel="http://host:4318"`` names one); a failing endpoint is a
    ``RuntimeWarning``, never an exception.

    A suite file with a ``matrix:`` is a grid, as ``evalyard run SUITE`` runs it: each cell a run,
    and the return value an ``ExperimentOutcome`` (as ``evalyard.experiment``'s) rather than one
    ``RunResult``; give ``generator_config={"model": ...}`` to run one model instead.
    """
    from .experiments import ExperimentRequest, grid_of
    from .run_service import RunRequest

    outputs = [*options.pop("outputs", ()), *([("otel", otel if isinstance(otel, str) else None)] if otel else [])]
    options.setdefault("run_to_cap", options.get("max_cost") is not None)  # the cap stops a run; refuses none
    request = RunRequest(suite=suite, scorers=list(scorers) if scorers else None, db=db, name=name,
                         outputs=outputs, **options)
    application = _app(app)
    model = (request.generator_config or {}).get("model")
    cells = grid_of(application, suite, [model] if model else (), db=db)
    if cells:
        return application.experiment(ExperimentRequest(run=request, cells=cells, name=name))
    outcome = application.run(request)
    if outcome.warnings:
        import warnings

        for warning in outcome.warnings:
            warnings.warn(warning, RuntimeWarning, stacklevel=2)
    return outcome.result


def experiment(suite: Any, models: Sequence[str], *, prompts: Sequence[str | None] = (None,),
               params: dict[str, Sequence[Any]] | None = None, scorers: Iterable[Any] | None = None,
               db: str | None = None, name: str = "", app: "Application | None" = None,
               **options: Any) -> "ExperimentOutcome":
    """Run ``suite`` through every cell of the grid ``models`` x ``prompts`` x ``params`` (each
    cell an ordinary run whose candidates the ``model`` generator makes) and compare the cells
    against the first, as ``evalyard run SUITE -m A -m B --prompt P --param NAME=V1,V2`` does.

    ``params`` maps a generation setting to its values (``{"temperature": [0, 0.7]}``);
    ``options`` are ``evalyard.RunRequest``'s (``judge_model``, ``concurrency``, ``max_cost``: a
    cap over the whole grid...). Returns an ``ExperimentOutcome``: ``experiment_id``, ``cells``,
    ``outcomes`` (each cell's ``RunOutcome``, its ``result`` a ``RunResult``) and ``comparison``
    (the table ``evalyard experiments show`` prints)."""
    from .experiments import ExperimentRequest, grid
    from .run_service import RunRequest

    options.setdefault("run_to_cap", options.get("max_cost") is not None)
    request = RunRequest(suite=suite, scorers=list(scorers) if scorers else None, db=db, **options)
    cells = grid(list(models), list(prompts) or [None], params)
    return _app(app).experiment(ExperimentRequest(run=request, cells=cells, name=name))


def resume(run_id: str, *, db: str | None = None, app: "Application | None" = None, **options: Any) -> "RunResult":
    """Finish an interrupted run, scoring only what is missing (``executor=`` moves it to another)."""
    return _app(app).resume(run_id, db=db, **options)


def compare(base: str, new: str, *, db: str | None = None, top: int = 5, cluster: str | None = None,
            app: "Application | None" = None) -> dict[str, Any]:
    """Compare run ``new`` against run ``base`` case by case: per-scorer mean deltas with a paired
    bootstrap interval, a paired t test's p-value (Holm-adjusted when several), the detectable
    difference, wins/losses/ties, regressions, aggregate deltas and fingerprint changes;
    ``cluster="metadata.FIELD"`` adds the cluster-robust figures."""
    return _app(app).compare(base, new, db=db, top=top, cluster=cluster)


def register_prompt_scorer(name: str, *, template: Any, answer: Any = None, app: "Application | None" = None,
                           **options: Any) -> type:
    """A prompt scorer made from a template, without writing a class: ``template`` is a library
    name (``correctness``), a ``.jinja`` path, or Jinja2 text (then say the ``answer`` shape:
    ``"binary"``, ``{"kind": "score", "range": [1, 5]}``...). ``options`` set the scorer's
    defaults (``model``, ``samples``, ``logprobs``...). Registered in ``app`` when given;
    otherwise pass the returned class in ``evaluate(..., scorers=[cls])``."""
    if app is not None:
        return app.register_prompt_scorer(name, template=template, answer=answer, **options)
    from .prompting.scorer import register_prompt_scorer as build

    return build(name, template=template, answer=answer, **options)
