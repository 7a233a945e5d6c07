"""The comparison part of a report: ``compare_runs``' paired deltas plus what a reader needs
to judge them -- whether the scorers were the same (fingerprints), and the most regressed
cases with both candidates side by side."""

from __future__ import annotations

from typing import Any

from ..reviewing import human_verdict
from .data import _compact, fingerprint_of

#: Regressed cases listed per scorer, side by side.
TOP_REGRESSED = 10


def fingerprint_changes(base, new) -> list[dict[str, Any]]:
    """Scorers present in both runs whose fingerprints differ: their deltas mix two instruments."""
    base_specs = {s["name"]: s for s in base.scorers or []}
    changes = []
    for spec in new.scorers or []:
        old = base_specs.get(spec["name"])
        if old is None:
            continue
        before, after = fingerprint_of(old), fingerprint_of(spec)
        if before != after:
            changed = sorted(k for k in set(old) | set(spec)
                             if k not in ("fingerprint",) and old.get(k) != spec.get(k))
            changes.append({"scorer": spec["name"], "base": before, "new": after, "fields": changed})
    return changes


def stored_pairwise(store, base, new) -> dict[str, Any] | None:
    """The A/B of a pairwise judge over these two runs (``compare --judge``), when one was made."""
    from ..figures.comparisons import pairwise_stats

    for row, _ in store.list_runs(limit=None, suite=f"pairwise {base.id} vs {new.id}"):
        if row.status == "completed":
            return pairwise_stats(store, row.id)
    return None


def large_compare(store, base, new_run) -> dict[str, Any]:
    """``compare_runs``' shape from SQL aggregates (``store.reading.paired_summary``): for runs
    too large to pair case by case in memory; its interval is a normal approximation. A run
    kept with ``run --cluster`` is compared by the same clusters (one GROUP BY per scorer)."""
    from ..analysis.clustering import kept_field
    from ..analysis.comparison import add_holm, add_test
    from ..figures.comparisons import add_clustered
    from ..store.reading import paired_summary

    field = kept_field(new_run)
    base_names = {s["name"] for s in base.scorers or []}
    new_names = [s["name"] for s in new_run.scorers or []]
    scorers = {}
    for spec in new_run.scorers or []:
        if spec["name"] in base_names:
            entry = add_test(paired_summary(store, base.id, new_run.id, spec["name"], top=TOP_REGRESSED,
                                            higher_is_better=spec.get("higher_is_better", True)))
            if field:
                add_clustered(entry, store, base.id, new_run, spec["name"], field)
            scorers[spec["name"]] = entry
    out = {"scorers": scorers, "cluster": field, "only_in_base": sorted(base_names - set(new_names)),
           "only_in_new": sorted(set(new_names) - base_names)}
    add_holm(out)
    return out


def regressed_case_ids(result: dict[str, Any]) -> list[str]:
    return [w["case_id"] for s in result["scorers"].values() for w in s["worst_cases"]]


def gather_compare(store, base_ref: str, new_run, new_table: dict[str, Any],
                   result: dict[str, Any] | None = None) -> dict[str, Any]:
    """Deltas of ``new_run`` against the run ``base_ref`` names (``result`` when already
    computed), and the base's values for the cases of the new run's table, aligned with it
    (for the case view): looked up for those cases only, so a large run costs a bounded page.
    A new run kept with ``run --cluster`` is compared with the same clusters."""
    from ..analysis.clustering import kept_field
    from ..figures.comparisons import compare_runs
    from ..store.reading import cases_by_id, values_of_cases

    base = store.get_run(base_ref)
    if result is None:
        result = compare_runs(store, base.id, new_run.id, top=TOP_REGRESSED, cluster=kept_field(new_run))
    ids = new_table["cases"]["id"]
    index = {case_id: i for i, case_id in enumerate(ids)}
    wanted = list(dict.fromkeys([*ids, *regressed_case_ids(result)]))
    base_cases = cases_by_id(store, base, wanted)
    base_values: dict[str, list[Any]] = {}
    base_errors: dict[str, dict[int, str]] = {}
    for name in result["scorers"]:
        values: list[Any] = [None] * len(ids)
        errors: dict[int, str] = {}
        for case_id, (value, error) in values_of_cases(store, base.id, name, ids).items():
            i = index[case_id]
            values[i] = _compact(value)
            if error is not None:
                errors[i] = error
        base_values[name], base_errors[name] = values, errors

    new_candidates = new_table["cases"]["candidate"]
    scorers = []
    for name, s in result["scorers"].items():
        worst = []
        for w in s["worst_cases"]:
            i = index.get(w["case_id"])
            worst.append({**w, "index": i, "base_candidate": (base_cases.get(w["case_id"]) or {}).get("candidate"),
                          "new_candidate": new_candidates[i] if i is not None else None})
        scorers.append({"name": name, **s, "worst_cases": worst})
    return {
        "pairwise": stored_pairwise(store, base, new_run),
        "human": human_verdict(store, base.id, new_run.id),
        "base": {"id": base.id, "name": base.name, "suite": store.suite_of(base).name,
                 "created_at": base.created_at.isoformat(timespec="seconds") if base.created_at else None},
        "scorers": scorers,
        "regressed": [s["name"] for s in scorers if s["regressed"]],
        "fingerprint_changes": fingerprint_changes(base, new_run),
        "only_in_base": result["only_in_base"],
        "only_in_new": result["only_in_new"],
        "table": {
            "candidate": [(base_cases.get(case_id) or {}).get("candidate") for case_id in ids],
            "v": base_values,
            "e": base_errors,
        },
    }
