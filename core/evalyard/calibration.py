"""Saved calibrations in everyday runs: which judge of a run has one (matched by the scorer's
fingerprint: scorer, config, judge model, template hash), the line "agrees with people: ..."
shown beside its scores, and the fitted threshold a run uses when asked (``threshold:
calibrated`` or ``evalyard run --calibrated``).

``evalyard calibrate --save`` (the judge plugin) stores a calibration's ``report`` with a
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
