"""Paired comparison of two runs, case by case, per scorer.

Each scorer's fingerprint (version, config, qualified name; for model-based scorers also the
model and prompt-template hash) is stored with a run; pairs whose fingerprints differ are
listed in ``fingerprint_changes`` (the CLI warns, and refuses with ``--strict``).
Corpus-level metrics (``aggregate``) are compared as base/new/delta.

Cases are matched by id; a case counts for a scorer only when both runs scored
it without error. Deltas are NEW - BASE, and "better" follows the scorer's
``higher_is_better``. A scorer *regressed* when the whole 95% paired bootstrap
interval of the mean delta lies on the worse side of zero (the clustered interval
with ``cluster``).

The pairs are streamed from one join in the database (``store.queries.paired_values``; the
orchestration is ``figures.comparisons.compare_runs``), in the NEW run's order: up to
``stats.BOOTSTRAP_LIMIT`` of them are kept for the bootstrap, past it only running sums
(the interval is then the normal one), the ``top`` worst cases and, with ``cluster``, one
sum per cluster (``clustering``). Each scorer also gets a paired t test's p-value, Holm's
adjustment when several scorers were compared, and the smallest difference the comparison
could detect (docs/statistics.md has the formulas and their sources).
"""

from __future__ import annotations

import heapq
import math
from typing import Any, Iterable

from ..errors import InputError

from .stats import BOOTSTRAP_LIMIT, bootstrap_ci, detectable_difference, holm, normal_ci, paired_test

TIE_TOLERANCE = 1e-9


def scorer_changes(name: str, base_spec: dict[str, Any], spec: dict[str, Any], base_totals: dict[str, Any],
                   new_totals: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """One scorer's corpus-level metrics as base/new/delta, and its fingerprint change (None when
    both runs' fingerprints agree), from the two runs' stored descriptions and totals."""
    base_aggregate = base_totals.get("aggregate") or {}
    aggregate = {metric: {"base": base_aggregate.get(metric), "new": value,
                          "delta": (value - base_aggregate[metric]) if metric in base_aggregate else None}
                 for metric, value in (new_totals.get("aggregate") or {}).items()}
    base_print, new_print = base_spec.get("fingerprint"), spec.get("fingerprint")
    change = None if base_print == new_print else {
        "scorer": name, "base": base_print, "new": new_print,
        "differs_in": differences(base_spec.get("fingerprint_data"), spec.get("fingerprint_data"))}
    return aggregate, change


def paired(pairs: Iterable[tuple[str, float, float]], higher: bool, top: int) -> dict[str, Any]:
    """One scorer's paired figures from its (case id, base value, new value) pairs, streamed."""
    sign = 1 if higher else -1
    kept: list[tuple[float, float]] | None = []  # (base, new) while there are few enough to bootstrap
    count = wins = losses = 0
    base_sum = new_sum = mean = squares = 0.0
    worst: list[tuple[float, int, str, float, float]] = []  # a max-heap (negated keys) of the `top` worst
    for case_id, b, v in pairs:
        d = v - b
        count += 1
        base_sum += b
        new_sum += v
        step = d - mean  # Welford's running variance of the deltas
        mean += step / count
        squares += step * (d - mean)
        wins += sign * d > TIE_TOLERANCE
        losses += sign * d < -TIE_TOLERANCE
        if top and sign * d < -TIE_TOLERANCE:
            item = (-sign * d, -count, case_id, b, v)
            if len(worst) < top:
                heapq.heappush(worst, item)
            elif item > worst[0]:
                heapq.heapreplace(worst, item)
        if kept is not None:
            kept.append((b, v))
            if len(kept) > BOOTSTRAP_LIMIT:
                kept = None
    std = math.sqrt(squares / (count - 1)) if count > 1 else None
    if kept is not None:  # as few as ever: the same sums and the paired bootstrap
        deltas = [v - b for b, v in kept]
        ci = bootstrap_ci(deltas)  # resampling per-case deltas = a paired bootstrap
        mean_delta = sum(deltas) / count if count else None
        base_mean = sum(b for b, _ in kept) / count if count else None
        new_mean = sum(v for _, v in kept) / count if count else None
    else:
        ci, mean_delta = normal_ci(mean, std, count), mean
        base_mean, new_mean = base_sum / count, new_sum / count
    se = std / math.sqrt(count) if std is not None else None
    entry: dict[str, Any] = {
        "paired_cases": count,
        "base_mean": base_mean,
        "new_mean": new_mean,
        "mean_delta": mean_delta,
        "se": se,
        "ci95": list(ci) if ci else None,
        "wins": wins,
        "losses": losses,
        "ties": count - wins - losses,
        "regressed": _worse(ci, higher),
        "higher_is_better": higher,
        "worst_cases": [{"case_id": c, "base": b, "new": v, "delta": v - b}
                        for _, _, c, b, v in sorted(worst, reverse=True)],
    }
    return add_test(entry)


def add_test(entry: dict[str, Any]) -> dict[str, Any]:
    """The paired t test and the detectable difference of an entry with its ``se`` and pairs."""
    se, count = entry["se"], entry["paired_cases"]
    entry["test"] = {"kind": "paired t", **paired_test(entry["mean_delta"], se, count - 1)} if se is not None else None
    entry["detectable"] = _detectable(se, count)
    return entry


def add_holm(out: dict[str, Any]) -> None:
    """Holm-adjusted p-values beside the raw ones, and how many scorers were tested."""
    tested = {name: s["test"]["p"] for name, s in out["scorers"].items() if s.get("test")}
    for name, p in holm(tested).items():
        out["scorers"][name]["p_holm"] = p
    out["tests"] = len(tested)


def add_clustered(entry: dict[str, Any], field: str, totals: list[tuple[int, float]], with_field: int,
                  run_id: str) -> None:
    """The cluster-robust interval, test and detectable difference beside the naive ones, from the
    per-cluster totals of the deltas; the verdict ``regressed`` then follows the clustered interval."""
    from .clustering import describe

    if totals and not with_field:
        raise InputError(f"--cluster: no case of run {run_id} has {field}")
    view = describe(field, totals, with_field, entry["se"], entry["ci95"])
    entry["clustered"] = view
    if view is None:
        return
    entry["regressed"] = _worse(view["ci95"], entry["higher_is_better"])
    entry["naive_test"] = entry["test"]
    entry["test"] = {"kind": "clustered t", **paired_test(view["mean"], view["se"], view["clusters"] - 1)}
    entry["naive_detectable"] = entry["detectable"]
    entry["detectable"] = _detectable(view["se"], entry["paired_cases"], view["clusters"])


def _worse(ci, higher: bool) -> bool:
    return bool(ci and (ci[1] < 0 if higher else ci[0] > 0))


def _detectable(se: float | None, n: int, clusters: int | None = None) -> dict[str, Any] | None:
    """The minimum detectable difference at 80% power, two-sided alpha 0.05, for this SE."""
    if se is None:
        return None
    return {"difference": detectable_difference(se), "n": n, "clusters": clusters, "se": se,
            "alpha": 0.05, "power": 0.8}


def differences(base: Any, new: Any, prefix: str = "") -> list[str]:
    """Which keys of two fingerprint records differ (``config.case_sensitive``, ``version``)."""
    if isinstance(base, dict) and isinstance(new, dict):
        keys = sorted(set(base) | set(new))
        found: list[str] = []
        for key in keys:
            found += differences(base.get(key), new.get(key), f"{prefix}{key}.")
        return found
    return [] if base == new else [prefix.rstrip(".") or "unknown (a run made before fingerprints)"]
