"""Calibration: how well a scorer agrees with human labels (``calibration``, the figures of
``evalyard calibrate``, from ``agreement``), kept with ``--save``, and saved calibrations in
everyday runs: which judge of a run has one (matched by the scorer's
fingerprint: scorer, config, judge model, template hash), the line "agrees with people: ..."
shown beside its scores, and the fitted threshold a run uses when asked (``threshold:
calibrated`` or ``evalyard run --calibrated``).

``evalyard calibrate --save`` stores a calibration's ``report`` with a
``summary`` of these keys:

- ``n``, ``accuracy``, ``kappa``, ``basis``: agreement of the judge's own verdicts (its labels,
  or its values cut at its own threshold) with the human labels;
- ``threshold``, ``direction``: the fitted cut (positive when value >= threshold; ``<=`` means
  the judge's values run against the labels, and no threshold is applied);
- ``held_out``: ``{method, accuracy, kappa}`` of the fitted cut on cases it was not fitted on;
- ``value``: what the cut applies to: ``value``, ``calibration_value`` (``Scorer.calibration_value``)
  or ``details.KEY``;
- ``auc`` (or None), ``data``, ``data_hash``, ``labels``.
"""

from __future__ import annotations

from typing import Any

from .errors import InputError
from .scoring import Score, Scorer
from .suite import CALIBRATED


def is_judge(spec: dict[str, Any]) -> bool:
    """Whether a run's scorer description is a model-based scorer (its fingerprint names a model)."""
    def names_model(data: Any) -> bool:
        if isinstance(data, dict):
            return bool(data.get("model")) or any(names_model(v) for v in data.values())
        return False

    return names_model(spec.get("fingerprint_data"))


def source_value(scorer: Scorer, score: Score, source: str) -> float | None:
    """The number a calibration was fitted on, for one score."""
    if score.error is not None:
        return None
    if source == "calibration_value":
        return scorer.calibration_value(score)
    if source.startswith("details."):
        found: Any = score.details or {}
        for part in source[len("details."):].split("."):
            found = found.get(part) if isinstance(found, dict) else None
        return float(found) if isinstance(found, (int, float)) and not isinstance(found, bool) else None
    return score.value


def summary_of(row: Any) -> dict[str, Any]:
    summary = dict((row.report or {}).get("summary") or {})
    summary.update(id=row.id, created_at=row.created_at.isoformat(timespec="seconds") if row.created_at else None)
    return summary


def apply_calibrations(store: Any, prepared: list, every_judge: bool = False) -> None:
    """Give each scorer asked for ``threshold: calibrated`` (every judge with a saved calibration when
    ``every_judge``) the threshold of its newest saved calibration; record what was applied."""
    for p in prepared:
        asked = p.spec.threshold == CALIBRATED
        if not asked and not every_judge:
            continue
        description = p.describe()
        row = store.calibration(description["fingerprint"])
        where = p.spec.origin or "scorer"
        if row is None:
            if asked:
                raise InputError(f"{where}: scorer {p.name!r} asks for threshold: calibrated, but no saved calibration "
                                 f"matches its fingerprint (scorer, config, judge model, template): run `evalyard "
                                 f"calibrate DATA --scorer {p.name} --save` with the same options first")
            continue
        summary = summary_of(row)
        if summary.get("threshold") is None or summary.get("direction") != ">=":
            if asked:
                reason = ("its values run against the human labels" if summary.get("direction") == "<="
                          else "it has no fitted threshold")
                raise InputError(f"{where}: the saved calibration {row.id} of {p.name!r} cannot give a threshold: "
                                 f"{reason}")
            continue
        p.spec.threshold = summary["threshold"]
        p.calibration = {"id": row.id, "threshold": summary["threshold"], "value": summary.get("value", "value")}


def agreement(store: Any, spec: dict[str, Any]) -> dict[str, Any] | None:
    """What a run shows about one scorer's agreement with people: None for a scorer that is no
    judge, ``{"status": "uncalibrated"}`` for a judge without a saved calibration, else the
    calibration's figures -- those of the fitted threshold when the run used it."""
    if not is_judge(spec):
        return None
    applied = spec.get("calibration")
    row = None
    if applied:
        row = store.calibration_by_id(applied["id"])
    if row is None and spec.get("fingerprint"):
        row = store.calibration(spec["fingerprint"])
    if row is None:
        return {"status": "uncalibrated", "line": "uncalibrated (no saved calibration: evalyard calibrate DATA "
                                                  "--scorer NAME --save)"}
    summary = summary_of(row)
    held = summary.get("held_out") or {}
    if applied and held:
        accuracy, kappa, basis = held.get("accuracy"), held.get("kappa"), \
            f"calibrated threshold {applied['threshold']:.4g}, {held.get('method')}"
    else:
        accuracy, kappa, basis = summary.get("accuracy"), summary.get("kappa"), summary.get("basis")
    out = {"status": "calibrated", "calibration_id": row.id, "n": summary.get("n"), "accuracy": accuracy,
           "kappa": kappa, "basis": basis, "threshold_applied": bool(applied),
           "fitted_threshold": summary.get("threshold"), "held_out": summary.get("held_out"),
           "data": summary.get("data"), "created_at": summary.get("created_at")}
    out["line"] = agreement_line(out)
    return out


def _num(value: Any) -> str:
    return "-" if value is None else f"{value:.2f}"


def agreement_line(view: dict[str, Any]) -> str:
    text = (f"agrees with people: kappa {_num(view.get('kappa'))}, accuracy {_num(view.get('accuracy'))} on "
            f"{view.get('n')} labelled cases ({view.get('basis')})")
    held = view.get("held_out") or {}
    if not view.get("threshold_applied") and view.get("fitted_threshold") is not None and held:
        text += (f"; its calibrated threshold {view['fitted_threshold']:.4g} gets accuracy {_num(held.get('accuracy'))} "
                 f"held out (threshold: calibrated, or run --calibrated)")
    return text


def agreements(store: Any, specs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``agreement`` for each judge of a run, by scorer name."""
    out = {}
    for spec in specs or []:
        view = agreement(store, spec)
        if view is not None:
            out[spec["name"]] = view
    return out


# -- calibrating a scorer against human labels ---------------------------------------

DEFAULT_LABEL = "metadata.human_label"
SHOWN_DISAGREEMENTS = 10


def _label_of(case: Any, field: str) -> Any:
    if field.startswith("metadata."):
        return case.metadata.get(field[len("metadata."):])
    if field in ("input", "candidate", "reference"):
        return getattr(case, field)
    return case.metadata.get(field)  # a column the loader kept in metadata


def _run_scorer(run: Any, scorer: str | None) -> dict[str, Any]:
    described = run.scorers or []
    if scorer is None:
        if len(described) != 1:
            names = ", ".join(s["name"] for s in described) or "none"
            raise InputError(f"run {run.id} has several scorers ({names}): choose one with --scorer")
        return described[0]
    for entry in described:
        if scorer in (entry["name"], entry.get("qualified")):
            return entry
    names = ", ".join(s["name"] for s in described) or "none"
    raise InputError(f"run {run.id} has no scorer {scorer!r} (it has: {names})")


def _scorer_instance(app: Any, entry: dict[str, Any]) -> Any:
    """The run's scorer, to ask it for the value calibration should use (its stored config, else defaults)."""
    try:
        cls = app.registry.scorers.entry(entry.get("qualified") or entry["name"]).obj
    except Exception:  # a scorer no longer installed: its stored values still calibrate
        return None
    try:
        return cls(cls.make_config(entry.get("config") or {}))
    except Exception:
        return cls()


def _value_source(scorer: Any, asked: str) -> str:
    """``auto``: the scorer's ``calibration_value`` when it defines one, else its value."""
    if asked != "auto":
        return asked
    if scorer is not None and type(scorer).calibration_value is not Scorer.calibration_value:
        return "calibration_value"
    return "value"


def _file_hash(path: str) -> str:
    import hashlib

    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def calibration(app: Any, data: str, *, run_ref: str | None, scorer: str | None, label_field: str,
                positive: str | None, judge_model: str | None, db: str | None, concurrency: int,
                value: str = "auto", with_baselines: bool = True) -> dict[str, Any]:
    from .agreement import Pair, agreement_report

    suite, _ = app.load_suite(data)
    labels = {c.id: _label_of(c, label_field) for c in suite.cases}
    if all(v is None or v == "" for v in labels.values()):
        raise InputError(f"no case carries a human label in {label_field} (choose the field with --label)",
                         path=data)
    if run_ref is None:
        if scorer is None:
            raise InputError("give --run RUN_ID (an existing run) or --scorer NAME (to score the cases now)")
        result = app.evaluate(data, [scorer], db=db, judge_model=judge_model, concurrency=concurrency,
                              name=f"calibrate {scorer}")
        run_ref = result.run_id
        scorer = result.summary and next(iter(result.summary))
    store = app.open_store(db)
    run = store.get_run(run_ref)
    entry = _run_scorer(run, scorer)
    instance = _scorer_instance(app, entry)
    source = _value_source(instance, value)
    if source == "calibration_value" and instance is None:
        raise InputError(f"scorer {entry['name']!r} is not installed: calibrate on --value value or details.KEY")
    results = {r.case_id: r for r in store.results(run.id, entry["name"])}
    cases = {c.id: c for c in store.run_cases(run)}
    pairs, skipped = [], {"no_human_label": 0, "no_result": 0, "scorer_error": 0, "no_verdict": 0}
    for case in suite.cases:
        human = labels[case.id]
        row = results.get(case.id)
        if human is None or human == "":
            skipped["no_human_label"] += 1
        elif row is None:
            skipped["no_result"] += 1
        elif row.error is not None:
            skipped["scorer_error"] += 1
        else:
            number = source_value(instance, Score(value=row.value, label=row.label, details=row.details or {}), source)
            if number is None and row.label is None:
                skipped["no_verdict"] += 1
                continue
            scored = cases.get(case.id, case)
            sources = "\n".join([*(scored.context or []), scored.reference or ""]).strip()
            pairs.append(Pair(case.id, human, number, row.label, row.details or {}, candidate=scored.candidate,
                              sources=sources or None))
    if not pairs:
        raise InputError(f"no case has both a human label and a verdict of {entry['name']} in run {run.id} "
                         f"(skipped: {', '.join(f'{k}={v}' for k, v in skipped.items() if v)})", path=data)
    report = agreement_report(pairs, higher_is_better=entry.get("higher_is_better", True),
                              scorer_threshold=_number_or_none(entry.get("threshold")), positive=positive,
                              with_baselines=with_baselines)
    out = {"data": data, "data_hash": _file_hash(data), "label_field": label_field, "positive": positive,
           "run_id": run.id, "scorer": entry["name"], "qualified": entry.get("qualified"),
           "fingerprint": entry.get("fingerprint"), "fingerprint_data": entry.get("fingerprint_data"),
           "value": source, "cases": len(suite.cases), "skipped": skipped, **report}
    out["summary"] = summary(out)
    return out


def _number_or_none(value: Any) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def summary(report: dict[str, Any]) -> dict[str, Any]:
    """What a run shows of a saved calibration (the keys ``evalyard.calibration`` documents)."""
    labels = report["labels"] or {}
    best = report["threshold"] or {}
    return {"n": labels.get("n", report["compared"]), "accuracy": labels.get("accuracy"),
            "kappa": labels.get("kappa"), "basis": labels.get("basis"), "threshold": best.get("threshold"),
            "direction": best.get("direction"), "held_out": best.get("held_out"), "value": report["value"],
            "auc": report["auc"], "data": report["data"], "data_hash": report["data_hash"],
            "labels": report["label_field"], "positive": report["positive"], "balance": report["balance"]}


def save_calibration(app: Any, report: dict[str, Any], db: str | None) -> int:
    if not report.get("fingerprint"):
        raise InputError(f"run {report['run_id']} stored no fingerprint for {report['scorer']} (a run made before "
                         f"fingerprints): calibrate with --scorer to score the cases again")
    if report["labels"] is None and report["threshold"] is None:
        raise InputError(f"nothing to save: the human labels in {report['label_field']} and the verdicts of "
                         f"{report['scorer']} could not be compared (name the positive label with --positive)",
                         path=report["data"])
    store = app.open_store(db)
    return store.save_calibration(fingerprint=report["fingerprint"], scorer=report.get("qualified") or report["scorer"],
                                  data_path=report["data"], data_hash=report["data_hash"], run_id=report["run_id"],
                                  n=report["summary"]["n"], report=report)
