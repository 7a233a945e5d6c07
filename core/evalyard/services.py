"""The application's services over stored runs: what the statistics need orchestrated.

The statistics (``evalyard.analysis``) are pure functions over rows and values, and the store
(``evalyard.store``) owns every query; the functions here join the two: they read rows with the
store's named queries, hand them to the analysis, and, where a figure needs a run of its own
(calibrating a scorer on a data file, a pairwise judge's A/B), plan and execute it through the
``Application``. Nothing below this module takes the application.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Iterator

from .analysis import calibration as calib
from .analysis import clustering, comparison, labels, pairwise
from .errors import InputError

if TYPE_CHECKING:
    from .app import Application
    from .runner import PreparedScorer
    from .store import Store
    from .store.models import RunRow


def open_existing_store(app: "Application", db: str | None) -> "Store | None":
    """The run's database when it exists (read for the cache and the history); None for a
    SQLite file not made yet: a plan creates nothing."""
    url = app.settings.database_url(db)
    if url.startswith("sqlite:///") and not url.startswith("sqlite:///:memory:") \
            and not Path(url[len("sqlite:///"):]).exists():
        return None
    return app.open_store(db)


# -- saved calibrations in runs ---------------------------------------------------------------------

def apply_calibrations(store: "Store", prepared: list["PreparedScorer"], every_judge: bool = False) -> list[str]:
    """Record, for each scorer with a saved calibration, the one its figures come from; give each
    scorer asked for ``threshold: calibrated`` (every judge with one when ``every_judge``) the
    threshold it fitted (``analysis.calibration.apply_calibration``). Returns the warnings to show."""
    warnings = []
    for p in prepared:  # any scorer: a run shows the agreement of any scorer calibrated against people
        warning = calib.apply_calibration(p, store.calibration(p.describe()["fingerprint"]), every_judge)
        if warning:
            warnings.append(warning)
    return warnings


def calibration_row(store: "Store", spec: dict[str, Any]) -> tuple[Any, bool]:
    """The saved calibration a run's scorer shows: the one it applied, else the one it recorded,
    else (a run made before runs recorded theirs) the newest of its fingerprint; and whether it
    is that newest one."""
    applied, used = spec.get("calibration"), spec.get("calibration_used")
    row = None
    for found in (applied, used):
        if row is None and found:
            row = store.calibration_by_id(found["id"])
    newest = row is None and not used
    if newest and spec.get("fingerprint"):
        row = store.calibration(spec["fingerprint"])
    return row, newest


def agreements(store: "Store", specs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``analysis.calibration.agreement`` for each scorer of a run that has one (a saved
    calibration, or a judge's "uncalibrated"), by scorer name."""
    out = {}
    for spec in specs or []:
        view = calib.agreement(spec, *calibration_row(store, spec))
        if view is not None:
            out[spec["name"]] = view
    return out


# -- calibrating a scorer against human labels (``evalyard calibrate``) ----------------------------

def _scorer_instance(app: "Application", entry: dict[str, Any]) -> Any:
    """The run's scorer, to ask it for the value calibration should use (its stored config, else defaults)."""
    try:
        cls = app.registry.scorers.entry(entry.get("qualified") or entry["name"]).obj
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


def calibration(app: "Application", data: str | None, *, run_ref: str | None, scorer: str | None, label_field: str,
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
    instance = _scorer_instance(app, entry)
    source = calib.value_source(instance, value)
    if source == "calibration_value" and instance is None:
        raise InputError(f"scorer {entry['name']!r} is not installed: calibrate on --value value or details.KEY")
    results = {r.case_id: r for r in store.results(run.id, entry["name"])}
    cases = {c.id: c for c in store.run_cases(run)}
    return calib.calibration_report(suite.cases, results, cases, entry, instance, source, run_id=run.id, data=data,
                                    data_hash=data_hash, label_field=label_field, positive=positive,
                                    with_baselines=with_baselines)


def save_calibration(app: "Application", report: dict[str, Any], db: str | None) -> int:
    """Keep a calibration report, for runs of the same judge (fingerprint) to show and apply."""
    calib.check_savable(report)
    store = app.open_store(db)
    return store.save_calibration(fingerprint=report["fingerprint"], scorer=report.get("qualified") or report["scorer"],
                                  data_path=report["data"], data_hash=report["data_hash"], run_id=report["run_id"],
                                  n=report["summary"]["n"], report=report)


# -- comparing runs (``evalyard compare``) and clusters ---------------------------------------------

def add_clustered(entry: dict[str, Any], store: "Store", base_id: str, new_run: "RunRow", scorer: str,
                  field: str) -> None:
    """``analysis.comparison.add_clustered`` with the per-cluster totals of the deltas."""
    from .store.queries import paired_cluster_totals

    totals, with_field = paired_cluster_totals(store, base_id, new_run, scorer, clustering.parse_cluster(field))
    comparison.add_clustered(entry, field, totals, with_field, new_run.id)


def compare_runs(store: "Store", base_ref: str, new_ref: str, top: int = 5, cluster: str | None = None) -> dict[str, Any]:
    """Two runs compared case by case, per scorer they share (``analysis.comparison``), the pairs
    streamed from the store."""
    from .store.queries import paired_values

    if cluster:
        clustering.parse_cluster(cluster)  # a malformed field is refused before any query
    base, new = store.get_run(base_ref), store.get_run(new_ref)
    base_scorers = {s["name"]: s for s in base.scorers}
    out: dict[str, Any] = {"base": base.id, "new": new.id, "scorers": {}, "fingerprint_changes": [],
                           "cluster": cluster}
    for spec in new.scorers:
        name = spec["name"]
        if name not in base_scorers:
            continue
        entry = comparison.paired(paired_values(store, base.id, new.id, name), spec.get("higher_is_better", True),
                                  top)
        if cluster:
            add_clustered(entry, store, base.id, new, name, cluster)
        entry["aggregate"], change = comparison.scorer_changes(
            name, base_scorers[name], spec, ((base.totals or {}).get("scorers") or {}).get(name) or {},
            ((new.totals or {}).get("scorers") or {}).get(name) or {})
        if change:
            out["fingerprint_changes"].append(change)
        out["scorers"][name] = entry
    comparison.add_holm(out)
    out["only_in_base"] = sorted(set(base_scorers) - {s["name"] for s in new.scorers})
    out["only_in_new"] = sorted({s["name"] for s in new.scorers} - set(base_scorers))
    return out


def cluster_run(store: "Store", run_id: str, field: str) -> dict[str, Any]:
    """Every scorer's clustered summary of a finished run, by scorer, kept beside its other
    statistics in the run's totals (``totals["scorers"][name]["clustered"]``) so ``runs show``
    and the report show them later."""
    from .store.queries import add_to_scorer_totals, cluster_totals

    path = clustering.parse_cluster(field)
    run = store.get_run(run_id)
    scorers = (run.totals or {}).get("scorers") or {}
    out: dict[str, Any] = {}
    for spec in run.scorers or []:
        name = spec["name"]
        groups, with_field = cluster_totals(store, run, name, path)
        if groups and not with_field:
            raise InputError(f"--cluster: no case of run {run.id} has {field!r} (the run is kept)")
        view = clustering.describe_scorer(field, scorers.get(name) or {}, groups, with_field)
        if view is not None:
            out[name] = view
    add_to_scorer_totals(store, run.id, "clustered", out)
    return out


# -- a pairwise judge's A/B (``evalyard compare BASE NEW --judge``) ----------------------------------

def pairwise_run(app: "Application", base_ref: str, new_ref: str, *, judge: str = "pairwise",
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


def pairwise_stats(store: "Store", run_id: str) -> dict[str, Any]:
    """``analysis.pairwise.pairwise_stats`` of a stored pairwise run."""
    run = store.get_run(run_id)
    scorer = run.scorers[0]["name"]
    records, errors = pairwise.judgements({c.id: c for c in store.run_cases(run)}, store.results(run.id, scorer))
    return pairwise.pairwise_stats(run.id, scorer, records, errors)


# -- people's labels (``evalyard label``, ``calibrate --run``) ---------------------------------------

def save_label(store: "Store", run_id: str, case_id: str, label: str, *, scorer: str = "",
               labeller: str = "") -> None:
    """Store (or replace) a person's yes/no label of one case."""
    from .store.labels import save_label as save

    labels.check_label(label)
    save(store, run_id, case_id, label, scorer=scorer, labeller=labeller)


def stored_labels(store: "Store", run_id: str, scorer: str | None = None) -> dict[str, dict[str, Any]]:
    """Per labelled case: its label, labeller and time (``store.labels.stored_labels``)."""
    from .store.labels import stored_labels as read

    return read(store, run_id, scorer)


def labelled_cases(store: "Store", run_id: str, scorer: str | None = None,
                   field: str = "human_label") -> tuple[list[Any], str]:
    """The run's labelled cases, each with its stored label in ``metadata[field]``, in suite order,
    and the labels' content hash: a labelled data file made from the database."""
    from .store.labels import run_cases

    run = store.get_run(run_id)
    found = stored_labels(store, run.id, scorer)
    cases = list(run_cases(store, run, list(found)).values())
    for case in cases:
        case.metadata = {**case.metadata, field: found[case.id]["label"]}
    return cases, labels.labels_hash({c.id: found[c.id] for c in cases})


def disagreements(store: "Store", run: "RunRow", entry: dict[str, Any]) -> Iterator[labels.Pick]:
    """Labelled cases whose label the judge's verdict contradicts (oldest label first)."""
    from .store.labels import verdicts

    found = stored_labels(store, run.id, entry["name"])
    return labels.disagreements(found, verdicts(store, run.id, entry["name"], list(found), errors=False), entry)


def stratified(store: "Store", run: "RunRow", entry: dict[str, Any], size: int, *, bins: int = labels.DEFAULT_BINS,
               seed: int = 0) -> list[labels.Pick]:
    """Up to ``size`` unlabelled cases, drawn evenly from ``bins`` equal-width bins of the
    judge's value (one LIMIT query per bin; bins with too few cases leave their share to the
    others). Results with a label but no value are drawn evenly by label; results with neither
    give no verdict to check and are never offered."""
    from .store.labels import unlabelled_strata

    return labels.round_robin(unlabelled_strata(store, run, entry["name"], size, bins=bins, seed=seed), size)


def sample(store: "Store", run: "RunRow", entry: dict[str, Any], size: int, *, bins: int = labels.DEFAULT_BINS,
           seed: int = 0) -> list[labels.Pick]:
    """The cases to label, in order: the labelled cases the judge disagrees with first (a second
    pass reviews them), then up to ``size`` unlabelled cases stratified by the judge's value."""
    return [*disagreements(store, run, entry), *stratified(store, run, entry, size, bins=bins, seed=seed)]
