"""The application's services over stored runs: the figures that need a run of their own.

Calibrating a scorer on a data file and a pairwise judge's A/B plan and execute a run through the
``Application``, then read it; the figures that need only the store (agreements, comparisons,
clusters, labels) are ``evalyard.figures``, below the application, where the sinks read them too.
Nothing below this module takes the application.
"""

from __future__ import annotations

import hashlib
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from .analysis import calibration as calib
from .analysis import labels, pairwise
from .errors import InputError
from .figures.labels import labelled_cases

if TYPE_CHECKING:
    from .registry import Registry
    from .run_contract import RunApplication
    from .store import Store


# -- calibrating a scorer against human labels (``evalyard calibrate``) ----------------------------

def _scorer_instance(registry: "Registry", entry: dict[str, Any]) -> Any:
    """The run's scorer, to ask it for the value calibration should use (its stored config, else defaults)."""
    try:
        cls = registry.scorers.entry(entry.get("qualified") or entry["name"]).obj
    except Exception:  # a scorer no longer installed: its stored values still calibrate
        return None
    try:
        return cls(cls.make_config(entry.get("config") or {}))
    except Exception:
        return cls()


def _file_hash(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def _stored_labels(store: "Store", run_ref: str | None, scorer: str | None,
                   reviews: bool = False) -> tuple[Any, str, str, str]:
    """The run's cases labelled in the database, as a labelled data file would give them; with
    ``reviews``, a pairwise judge's run labelled by people's blind reviews of its two runs."""
    if run_ref is None:
        raise InputError("give DATA (a labelled data file), or --run RUN_ID whose cases were labelled "
                         "with `evalyard label`" + (" (a pairwise judge's run with --reviews)" if reviews else ""))
    run = store.get_run(run_ref)
    if reviews:
        from .reviewing import review_labels

        cases, data_hash, source = review_labels(store, run)
        return SimpleNamespace(cases=cases), data_hash, source, calib.DEFAULT_LABEL
    cases, data_hash = labelled_cases(store, run.id, labels.scorer_entry(run, scorer)["name"])
    if not cases:
        raise InputError(f"run {run.id} has no labels in {store.url}: label its cases with `evalyard label {run.id}`, "
                         f"or give a labelled data file")
    return SimpleNamespace(cases=cases), data_hash, f"labels of run {run.id}", calib.DEFAULT_LABEL


def calibration(app: "RunApplication", data: str | None, *, run_ref: str | None, scorer: str | None, label_field: str,
                positive: str | None, judge_model: str | None, db: str | None, concurrency: int,
                value: str = "auto", with_baselines: bool = True, reviews: bool = False) -> dict[str, Any]:
    """``evalyard calibrate``: the human labels of DATA (or of a run's cases labelled with
    ``evalyard label``) against a scorer's verdicts, scoring the cases first when no run is given."""
    if reviews and data is not None:
        raise InputError("--reviews reads the labels from the database: give no DATA with it")
    if data is None:  # the labels people gave with `evalyard label` (or `evalyard review`), kept with the run
        suite, data_hash, data, label_field = _stored_labels(app.open_store(db), run_ref, scorer, reviews)
    else:
        suite, _ = app.load_suite(data)
        data_hash = _file_hash(data)
    calib.human_labels(suite.cases, label_field, data)  # refused before anything is scored
    if run_ref is None:
        if scorer is None:
            raise InputError("give --run RUN_ID (an existing run) or --scorer NAME (to score the cases now)")
        result = app.evaluate(data, [scorer], db=db, judge_model=judge_model, concurrency=concurrency,
                              name=f"calibrate {scorer}")
        run_ref = result.run_id
        scorer = result.summary and next(iter(result.summary))
    store = app.open_store(db)
    run = store.get_run(run_ref)
    entry = labels.scorer_entry(run, scorer)
    instance = _scorer_instance(app.registry, entry)
    source = calib.value_source(instance, value)
    if source == "calibration_value" and instance is None:
        raise InputError(f"scorer {entry['name']!r} is not installed: calibrate on --value value or details.KEY")
    results = {r.case_id: r for r in store.results(run.id, entry["name"])}
    cases = {c.id: c for c in store.run_cases(run)}
    return calib.calibration_report(suite.cases, results, cases, entry, instance, source, run_id=run.id, data=data,
                                    data_hash=data_hash, label_field=label_field, positive=positive,
                                    with_baselines=with_baselines)


# -- a pairwise judge's A/B (``evalyard compare BASE NEW --judge``) ----------------------------------

def pairwise_run(app: "RunApplication", base_ref: str, new_ref: str, *, judge: str = "pairwise",
                 judge_model: str | None = None, db: str | None = None, concurrency: int = 4) -> str:
    """The id of the pairwise judge's run over BASE and NEW: an earlier one with the same judge
    (resumed when it was interrupted), else a new one."""
    store = app.open_store(db)
    base, new = store.get_run(base_ref), store.get_run(new_ref)
    suite = pairwise.pairwise_suite(base, new, store.run_cases(base), store.run_cases(new))
    plan = app.plan(suite, [judge], name=suite.name, judge_model=judge_model, concurrency=concurrency)
    if not {"candidate", "reference"} <= set(type(plan.scorers[0].scorer).labels):
        raise InputError(f"--judge {judge}: not a pairwise judge (one that names the better of candidate and "
                         f"reference in both orders, such as pairwise or summary_quality)")
    fingerprint = plan.scorers[0].describe()["fingerprint"]
    for row, stored_suite in store.list_runs(limit=None, suite=suite.name):
        if stored_suite.version == suite.version and [s.get("fingerprint") for s in row.scorers] == [fingerprint]:
            if row.status != "completed":
                app.resume(row.id, db=db, concurrency=concurrency)
            return row.id
    return app.execute(plan, db=db, concurrency=concurrency).run_id
