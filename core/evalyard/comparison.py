"""Paired comparison of two runs, case by case, per scorer.

Each scorer's fingerprint (version, config, qualified name; for model-based scorers also the
model and prompt-template hash) is stored with a run; pairs whose fingerprints differ are
listed in ``fingerprint_changes`` (the CLI warns, and refuses with ``--strict``).
Corpus-level metrics (``aggregate``) are compared as base/new/delta.

Cases are matched by id; a case counts for a scorer only when both runs scored
it without error. Deltas are NEW - BASE, and "better" follows the scorer's
``higher_is_better``. A scorer *regressed* when the whole 95% paired bootstrap
interval of the mean delta lies on the worse side of zero.
"""

from __future__ import annotations

from typing import Any

from .stats import bootstrap_ci

TIE_TOLERANCE = 1e-9


def compare_runs(store, base_ref: str, new_ref: str, top: int = 5) -> dict[str, Any]:
    base, new = store.get_run(base_ref), store.get_run(new_ref)
    base_scorers = {s["name"]: s for s in base.scorers}
    out: dict[str, Any] = {"base": base.id, "new": new.id, "scorers": {}, "fingerprint_changes": []}
    for spec in new.scorers:
        name = spec["name"]
        if name not in base_scorers:
            continue
        higher = spec.get("higher_is_better", True)
        base_values = {r.case_id: r.value for r in store.results(base.id, name) if r.error is None and r.value is not None}
        pairs = [
            (r.case_id, base_values[r.case_id], r.value)
            for r in store.results(new.id, name)
            if r.error is None and r.value is not None and r.case_id in base_values
        ]
        deltas = [n - b for _, b, n in pairs]
        sign = 1 if higher else -1
        wins = sum(1 for d in deltas if sign * d > TIE_TOLERANCE)
        losses = sum(1 for d in deltas if sign * d < -TIE_TOLERANCE)
        ci = bootstrap_ci(deltas)  # resampling per-case deltas = a paired bootstrap
        mean = sum(deltas) / len(deltas) if deltas else None
        regressed = bool(ci and (ci[1] < 0 if higher else ci[0] > 0))
        worst = sorted(pairs, key=lambda p: sign * (p[2] - p[1]))[:top]
        base_totals = ((base.totals or {}).get("scorers") or {}).get(name) or {}
        new_totals = ((new.totals or {}).get("scorers") or {}).get(name) or {}
        aggregate = {
            metric: {"base": base_totals.get("aggregate", {}).get(metric), "new": value,
                     "delta": (value - base_totals["aggregate"][metric])
                     if metric in base_totals.get("aggregate", {}) else None}
            for metric, value in (new_totals.get("aggregate") or {}).items()
        }
        base_print, new_print = base_scorers[name].get("fingerprint"), spec.get("fingerprint")
        if base_print != new_print:
            out["fingerprint_changes"].append({
                "scorer": name, "base": base_print, "new": new_print,
                "differs_in": _differences(base_scorers[name].get("fingerprint_data"), spec.get("fingerprint_data")),
            })
        out["scorers"][name] = {
            "aggregate": aggregate,
            "paired_cases": len(pairs),
            "base_mean": sum(b for _, b, _ in pairs) / len(pairs) if pairs else None,
            "new_mean": sum(n for _, _, n in pairs) / len(pairs) if pairs else None,
            "mean_delta": mean,
            "ci95": list(ci) if ci else None,
            "wins": wins,
            "losses": losses,
            "ties": len(deltas) - wins - losses,
            "regressed": regressed,
            "higher_is_better": higher,
            "worst_cases": [
                {"case_id": c, "base": b, "new": n, "delta": n - b} for c, b, n in worst if sign * (n - b) < -TIE_TOLERANCE
            ],
        }
    out["only_in_base"] = sorted(set(base_scorers) - {s["name"] for s in new.scorers})
    out["only_in_new"] = sorted({s["name"] for s in new.scorers} - set(base_scorers))
    return out


def _differences(base: Any, new: Any, prefix: str = "") -> list[str]:
    """Which keys of two fingerprint records differ (``config.case_sensitive``, ``version``)."""
    if isinstance(base, dict) and isinstance(new, dict):
        keys = sorted(set(base) | set(new))
        found: list[str] = []
        for key in keys:
            found += _differences(base.get(key), new.get(key), f"{prefix}{key}.")
        return found
    return [] if base == new else [prefix.rstrip(".") or "unknown (a run made before fingerprints)"]
