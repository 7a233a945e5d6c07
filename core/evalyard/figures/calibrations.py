"""A run's saved calibrations: the one each scorer applies, the judges' agreement with people that
a run shows (``analysis.calibration``), read from the store, and a calibration report kept."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..analysis import calibration as calib

if TYPE_CHECKING:
    from ..runner import PreparedScorer
    from ..store import Store


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


def save_calibration(store: "Store", report: dict[str, Any]) -> int:
    """Keep a calibration report, for runs of the same judge (fingerprint) to show and apply."""
    calib.check_savable(report)
    return store.save_calibration(fingerprint=report["fingerprint"], scorer=report.get("qualified") or report["scorer"],
                                  data_path=report["data"], data_hash=report["data_hash"], run_id=report["run_id"],
                                  n=report["summary"]["n"], report=report)
