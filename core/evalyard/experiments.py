"""Experiments: one suite through a grid of models x prompts x generation settings, each cell an
ordinary run (report, export, compare and label work on it), grouped under an experiment id.

An experiment is a set of run requests (``evalyard.run_service``): the cells share the suite,
scorers, judge, response cache, concurrency, executor and outputs of the one request they are
made from, and differ in the ``model`` generator's settings, or, in a grid over the parameters of
the run's own generator (``-g rag/pipeline:... --param top_k=5,10``), in that generator's config. Cells run one after the other, each
with the whole concurrency budget; ``max_cost`` caps the whole grid. A cell's run is recorded
as it is created, so ``resume`` finishes every cell (resuming a stopped cell's run, starting the
cells never started) and runs nothing twice.

The comparison puts every cell beside the baseline (cell 0): each scorer's mean with its
interval, the paired difference to the baseline (case by case, as ``compare`` does) with its
p-value Holm-adjusted across every comparison shown, tokens and cost from the recorded usage,
the median latency of the cell's generation calls (the model under test answering a case; a
judge's calls are not the system's latency), the stability of each scorer's verdicts across
epochs, and the cells on the quality-cost frontier.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from .errors import InputError
from .run_service import RunOutcome, RunRequest, execute_request

if TYPE_CHECKING:
    from .run_contract import RunApplication
    from .store import Store


@dataclass(frozen=True)
class Cell:
    """One point of the grid: the model under test, its prompt template and generation settings;
    or (``generator`` named, no model) the values of the run's own generator's parameters, added
    to the config that generator was given."""

    model: str
    prompt: str | None = None
    params: tuple[tuple[str, Any], ...] = ()
    generator: str | None = None

    @property
    def label(self) -> str:
        parts = [self.model or self.generator or ""] + ([f"prompt={self.prompt}"] if self.prompt else [])
        return " ".join(parts + [f"{k}={v}" for k, v in self.params])

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "model": self.model, "prompt": self.prompt, "params": dict(self.params),
                **({"generator": self.generator} if self.generator else {})}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Cell":
        return cls(data.get("model") or "", data.get("prompt"), tuple((data.get("params") or {}).items()),
                   data.get("generator"))

    def generation(self, base: RunRequest) -> tuple[str | None, dict[str, Any]]:
        """(generator, config) of this cell's run: the ``model`` generator (None: the suite's own
        generator gets the model, as ``--model`` does), or the run's generator with this cell's values."""
        if self.generator:  # the run's generator (None: the suite's own, whose config these values join)
            return base.generator, {**(base.generator_config or {}), **dict(self.params)}
        return None, {"model": self.model, **({"prompt": self.prompt} if self.prompt else {}), **dict(self.params)}


def grid(models: Sequence[str], prompts: Sequence[str | None] = (None,),
         params: dict[str, Sequence[Any]] | None = None, generator: str | None = None) -> list[Cell]:
    """Every combination, models outermost; the first cell is the baseline. With ``generator``
    (``-g NAME``) and no model, a grid over that generator's parameters alone."""
    if generator and models:
        raise InputError("give either --model or --generator, not both")
    if generator:
        if any(p is not None for p in prompts):
            raise InputError("--prompt sets the prompt of --model MODEL; a generator's own template is one of its "
                             "parameters (--param NAME=V1,V2)")
        names = list(params or {})
        values = [list((params or {})[n]) for n in names]
        if not names or any(not v for v in values):
            raise InputError("a grid over a generator's parameters needs --param NAME=V1,V2 with values")
        return [Cell("", None, tuple(zip(names, combo)), generator) for combo in itertools.product(*values)]
    if not models:
        raise InputError("an experiment needs at least one model (-m/--model), or a generator (-g NAME) whose "
                         "parameters --param varies")
    names = list(params or {})
    values = [list((params or {})[n]) for n in names]
    if any(not v for v in values):
        raise InputError(f"--param {names[[not v for v in values].index(True)]}: give at least one value")
    return [Cell(model, prompt, tuple(zip(names, combo)))
            for model in models for prompt in (list(prompts) or [None]) for combo in itertools.product(*values)]


def parse_param(text: str) -> tuple[str, list[Any]]:
    """``--param NAME=V1,V2`` -> (NAME, [V1, V2]), numbers as numbers."""
    name, eq, listed = text.partition("=")
    if not eq or not name.strip() or not listed.strip():
        raise InputError(f"--param {text!r}: expected NAME=VALUE[,VALUE...]")
    return name.strip(), [_number(v.strip()) for v in listed.split(",") if v.strip()]


def _number(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def grid_of(app: "RunApplication", suite: Any, models: Sequence[str] = (), prompts: Sequence[str] = (),
            params: Sequence[str] = (), resume: str | None = None, db: str | None = None,
            generator: str | None = None) -> list[Cell] | None:
    """The cells when a run is a grid, else None: several models, prompts or settings (``-m``
    twice, ``--param``; ``-g NAME`` with ``--param``: a grid over that generator's parameters), a
    suite file's ``matrix:`` (when no model is given), or ``resume`` naming an experiment (its
    cells are stored: an empty list). The one place this is decided, so ``evalyard run``,
    ``evalyard.evaluate`` and the pytest plugin run the same thing for the same suite."""
    if len(models) > 1 or len(prompts) > 1 or params:
        if params and not models and not generator and _suite_file(suite):
            own = app.load_suite(suite)[0].generator  # --param alone: the suite's own generator's parameters
            generator = own[0] if own else None
        return grid(models, list(prompts) or [None], dict(parse_param(p) for p in params),
                    generator=generator if params else None)
    if resume:
        from .store.experiments import find_experiment

        return [] if find_experiment(app.open_store(db), resume) is not None else None
    if not models and _suite_file(suite):
        matrix = app.load_suite(suite)[0].matrix
        if matrix:
            return grid(matrix["models"], matrix["prompts"], matrix["params"])
    return None


def _suite_file(suite: Any) -> bool:
    from pathlib import PurePath

    return isinstance(suite, (str, PurePath)) and str(suite).endswith((".yaml", ".yml"))


@dataclass
class ExperimentRequest:
    """A grid over ``run`` (the settings every cell shares: suite, scorers, judge, concurrency,
    database, outputs...). ``resume``: an experiment id, to finish its cells."""

    run: RunRequest
    cells: list[Cell] = field(default_factory=list)
    name: str = ""
    resume: str | None = None


@dataclass
class ExperimentOutcome:
    experiment_id: str | None
    name: str
    cells: list[Cell]
    outcomes: list[RunOutcome]
    comparison: dict[str, Any] | None = None
    forecast: dict[str, Any] | None = None

    @property
    def failed(self) -> bool:
        return any(o.failed for o in self.outcomes)

    def to_dict(self) -> dict[str, Any]:
        if self.forecast is not None:
            return {"plan": self.forecast}
        return {"experiment_id": self.experiment_id, "name": self.name,
                "cells": [{**cell.to_dict(), **outcome.to_dict()} for cell, outcome in zip(self.cells, self.outcomes)],
                "comparison": self.comparison}


def run_experiment(app: "RunApplication", request: ExperimentRequest) -> ExperimentOutcome:
    """``Application.experiment``: see the module's docstring."""
    from .store import experiments as stored

    base = request.run
    store = app.open_store(base.db)
    existing: dict[int, str] = {}
    if request.resume:
        row = stored.get_experiment(store, request.resume)
        experiment_id, name = row.id, row.name
        cells = [Cell.from_dict(c) for c in row.cells]
        existing = stored.cell_runs(store, row.id)
        if base.suite is None:  # the bare --resume EXPERIMENT: the cells not started yet as the grid began
            base = dataclasses.replace(base, suite=row.source, **_shared_settings(row.spec))
    else:
        cells, name, experiment_id = request.cells, request.name, None
        if not cells:
            raise InputError("an experiment needs at least one cell")
    if base.forecast_only:
        return _forecast(app, base, cells, name, existing)
    base.check()
    if experiment_id is None:
        source = base.suite if isinstance(base.suite, str) else ""
        experiment_id = stored.create_experiment(store, name=name, source=source, cells=[c.to_dict() for c in cells],
                                                 spec=_spec(base))
        name = name or experiment_id
    outcomes, spent = [], 0.0
    for index, cell in enumerate(cells):
        cap = None if base.max_cost is None else max(0.0, base.max_cost - spent)
        outcome = _run_cell(app, base, cell, index, name, experiment_id, existing.get(index), cap)
        outcomes.append(outcome)
        spent += ((outcome.result.usage or {}).get("cost") or 0.0) if outcome.result else 0.0
        if base.max_cost is not None and spent >= base.max_cost:
            break  # the grid's cap is reached: the remaining cells wait for --resume
    run_ids = [o.result.run_id for o in outcomes if o.result is not None]
    comparison = compare_cells(store, cells[:len(run_ids)], run_ids)
    return ExperimentOutcome(experiment_id, name, cells, outcomes, comparison)


#: what every cell shares and a bare ``--resume EXPERIMENT`` must know again
SHARED = ("judge_model", "use_cache", "format", "field_map", "batch", "calibrated", "epochs",
          # a grid over a generator's parameters: the generator and the config its cells add values to
          "generator", "generator_config")


def _spec(base: RunRequest) -> dict[str, Any]:
    from .scoring import Scorer
    from .suite import ScorerSpec

    scorers = []
    for chosen in base.scorers or []:
        if isinstance(chosen, ScorerSpec):
            scorers.append({"name": chosen.name, "config": chosen.config, "threshold": chosen.threshold})
        elif isinstance(chosen, str):
            scorers.append({"name": chosen})
        elif isinstance(chosen, type) and issubclass(chosen, Scorer):
            scorers.append({"name": chosen.name})
    return {"scorers": scorers, "reducers": [list(pair) for pair in base.reducers],
            "extracts": [list(pair) for pair in base.extracts],
            **{key: getattr(base, key) for key in SHARED}}


def _shared_settings(spec: dict[str, Any]) -> dict[str, Any]:
    from .suite import ScorerSpec

    scorers = [ScorerSpec(s["name"], s.get("config") or {}, s.get("threshold"), origin="experiment")
               for s in spec.get("scorers") or []]
    return {"scorers": scorers or None, "reducers": [tuple(pair) for pair in spec.get("reducers") or []],
            "extracts": [tuple(pair) for pair in spec.get("extracts") or []],
            **{key: spec[key] for key in SHARED if key in spec}}


def _run_cell(app: "RunApplication", base: RunRequest, cell: Cell, index: int, name: str, experiment_id: str,
              run_id: str | None, cap: float | None) -> RunOutcome:
    from .run_service import stored_outcome
    from .store import experiments as stored

    store = app.open_store(base.db)

    def started(new_run_id: str, total: int) -> None:
        stored.add_cell_run(store, experiment_id, index, new_run_id)
        if base.on_start is not None:
            base.on_start(new_run_id, total)

    if run_id is not None:
        if store.get_run(run_id).status == "completed":
            return stored_outcome(app, run_id, base)
        request = RunRequest(resume=run_id, db=base.db, concurrency=base.concurrency, executor=base.executor,
                             max_errors=base.max_errors, fail_under=base.fail_under, fail_on_error=base.fail_on_error,
                             on_progress=base.on_progress, on_start=base.on_start)
        return execute_request(app, request)
    generator, config = cell.generation(base)
    request = dataclasses.replace(base, generator=generator, generator_config=config, name=f"{name}/{cell.label}",
                                  max_cost=cap, run_to_cap=cap is not None or base.run_to_cap, on_start=started,
                                  outputs=[(output, _cell_target(target, index)) for output, target in base.outputs])
    return execute_request(app, request)


def _cell_target(target: str | None, index: int) -> str | None:
    """Each cell's own file for an output with a target (``out.jsonl`` -> ``out.cell1.jsonl``)."""
    if not target or "://" in target or target == "-":
        return target
    stem, dot, suffix = target.rpartition(".")
    return f"{stem}.cell{index}.{suffix}" if dot and stem else f"{target}.cell{index}"


def _forecast(app: "RunApplication", base: RunRequest, cells: list[Cell], name: str,
              existing: dict[int, str]) -> ExperimentOutcome:
    """``--plan`` for the grid: each cell's forecast (what is missing, for a resumed one), and the totals."""
    lines, totals = [], {}
    for index, cell in enumerate(cells):
        generator, config = cell.generation(base)
        if index in existing:
            request = RunRequest(resume=existing[index], db=base.db, concurrency=base.concurrency,
                                 executor=base.executor, forecast_only=True)
        else:
            request = dataclasses.replace(base, generator=generator, generator_config=config, forecast_only=True,
                                          max_cost=None, run_to_cap=False)
        forecast = execute_request(app, request).forecast
        lines.append({"cell": index, "label": cell.label, "forecast": forecast})
        for key, value in forecast["totals"].items():
            if isinstance(value, bool):
                totals[key] = totals.get(key, True) and value
            elif value is None or (key in totals and totals[key] is None):
                totals[key] = None  # one cell's unknown figure makes the grid's unknown
            elif isinstance(value, (int, float)):
                totals[key] = totals.get(key, 0) + value
    return ExperimentOutcome(None, name, cells, [], forecast={"cells": lines, "totals": totals})


def compare_cells(store: Store, cells: list[Cell], run_ids: list[str]) -> dict[str, Any]:
    """The grid table: cells x scorers, each beside the baseline (cell 0)."""
    from .analysis.stats import holm
    from .figures.comparisons import compare_runs
    from .store.reading import generation_latency

    if not run_ids:
        return {"baseline": None, "cells": [], "tests": 0}
    baseline = run_ids[0]
    rows, pvalues = [], {}
    for index, (cell, run_id) in enumerate(zip(cells, run_ids)):
        run = store.get_run(run_id)
        totals = run.totals or {}
        usage = totals.get("usage") or {}  # every model call of the run: generating and judging
        paired = compare_runs(store, baseline, run_id, top=0)["scorers"] if index else {}
        scorers = {}
        for name, stats in (totals.get("scorers") or {}).items():
            entry = {"mean": stats.get("mean"), "ci95": stats.get("ci95"), "count": stats.get("count"),
                     "errors": stats.get("errors")}
            if stats.get("epochs"):  # --epochs: the reducer and how stable the verdicts were across epochs
                entry["epochs"] = stats["epochs"]
            if name in paired:
                p = paired[name]
                entry["versus_baseline"] = {"mean_delta": p["mean_delta"], "ci95": p["ci95"],
                                            "paired_cases": p["paired_cases"], "wins": p["wins"],
                                            "losses": p["losses"], "ties": p["ties"],
                                            "p": (p.get("test") or {}).get("p")}
                if entry["versus_baseline"]["p"] is not None:
                    pvalues[f"{index}\x00{name}"] = entry["versus_baseline"]["p"]
            scorers[name] = entry
        rows.append({"cell": index, "label": cell.label, "run_id": run_id, "status": run.status,
                     "scorers": scorers,
                     "calls": usage.get("calls", 0), "cache_hits": usage.get("cache_hits", 0),
                     "tokens_in": usage.get("prompt_tokens", 0), "tokens_out": usage.get("completion_tokens", 0),
                     "cost": usage.get("cost") if usage else 0.0,
                     "latency": generation_latency(store, run),
                     "higher_is_better": {s["name"]: s.get("higher_is_better", True) for s in run.scorers}})
    for key, adjusted in holm(pvalues).items():
        index, name = key.split("\x00", 1)
        rows[int(index)]["scorers"][name]["versus_baseline"]["p_holm"] = adjusted
    for name in rows[0]["scorers"]:
        for index in frontier(rows, name):
            rows[index]["scorers"][name]["frontier"] = True
    return {"baseline": baseline, "cells": rows, "tests": len(pvalues)}


def frontier(rows: list[dict[str, Any]], scorer: str) -> list[int]:
    """Cells no other cell beats on both quality (``scorer``'s mean) and cost: at least as good and
    at most as dear, better on one. A cell with no mean or no known cost is on no frontier."""
    points = []
    for row in rows:
        mean = (row["scorers"].get(scorer) or {}).get("mean")
        if mean is None or row["cost"] is None:
            continue
        sign = 1 if row["higher_is_better"].get(scorer, True) else -1
        points.append((row["cell"], sign * mean, row["cost"]))
    return [cell for cell, quality, cost in points
            if not any((q >= quality and c <= cost) and (q > quality or c < cost) for _, q, c in points)]
