"""The comparison part of a report: ``compare_runs``' paired deltas plus what a reader needs
to judge them -- whether the scorers were the same (fingerprints), and the most regressed
cases with both candidates side by side."""

from __future__ import annotations

from typing import Any

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
    from ..pairwise import pairwise_stats

    for row, _ in store.list_runs(limit=None, suite=f"pairwise {base.id} vs {new.id}"):
        if row.status == "completed":
            return pairwise_stats(store, row.id)
    return None


def gather_compare(store, base_ref: str, new_run, new_table: dict[str, Any]) -> dict[str, Any]:
    """Deltas of ``new_run`` against the run ``base_ref`` names, and the base's per-case values
    aligned with the new run's case order (for the case view)."""
    from ..comparison import compare_runs

    base = store.get_run(base_ref)
    result = compare_runs(store, base.id, new_run.id, top=TOP_REGRESSED)
    ids = new_table["cases"]["id"]
    index = {case_id: i for i, case_id in enumerate(ids)}
    base_candidates_by_id = {c.id: c.candidate for c in store.run_cases(base)}
    base_values: dict[str, list[Any]] = {}
    base_errors: dict[str, dict[int, str]] = {}
    for name in result["scorers"]:
        values: list[Any] = [None] * len(ids)
        errors: dict[int, str] = {}
        for row in store.results(base.id, name):
            i = index.get(row.case_id)
            if i is None:
                continue
            values[i] = _compact(row.value)
            if row.error is not None:
                errors[i] = row.error
        base_values[name], base_errors[name] = values, errors

    new_candidates = new_table["cases"]["candidate"]
    scorers = []
    for name, s in result["scorers"].items():
        worst = []
        for w in s["worst_cases"]:
            i = index.get(w["case_id"])
            worst.append({**w, "index": i, "base_candidate": base_candidates_by_id.get(w["case_id"]),
                          "new_candidate": new_candidates[i] if i is not None else None})
        scorers.append({"name": name, **s, "worst_cases": worst})
    return {
        "pairwise": stored_pairwise(store, base, new_run),
        "base": {"id": base.id, "name": base.name, "suite": store.suite_of(base).name,
                 "created_at": base.created_at.isoformat(timespec="seconds") if base.created_at else None},
        "scorers": scorers,
        "regressed": [s["name"] for s in scorers if s["regressed"]],
        "fingerprint_changes": fingerprint_changes(base, new_run),
        "only_in_base": result["only_in_base"],
        "only_in_new": result["only_in_new"],
        "table": {
            "candidate": [base_candidates_by_id.get(case_id) for case_id in ids],
            "v": base_values,
            "e": base_errors,
        },
    }
