"""Stored runs compared: two runs case by case (``evalyard compare``, the grid's comparison, the
report's and JUnit's regressions) and a pairwise judge's A/B, their pairs streamed from the store
into ``analysis.comparison`` and ``analysis.pairwise``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..analysis import clustering, comparison, pairwise

if TYPE_CHECKING:
    from ..store import Store
    from ..store.models import RunRow


def add_clustered(entry: dict[str, Any], store: "Store", base_id: str, new_run: "RunRow", scorer: str,
                  field: str) -> None:
    """``analysis.comparison.add_clustered`` with the per-cluster totals of the deltas."""
    from ..store.queries import paired_cluster_totals

    totals, with_field = paired_cluster_totals(store, base_id, new_run, scorer, clustering.parse_cluster(field))
    comparison.add_clustered(entry, field, totals, with_field, new_run.id)


def compare_runs(store: "Store", base_ref: str, new_ref: str, top: int = 5, cluster: str | None = None) -> dict[str, Any]:
    """Two runs compared case by case, per scorer they share (``analysis.comparison``), the pairs
    streamed from the store."""
    from ..store.queries import paired_values

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


def pairwise_stats(store: "Store", run_id: str) -> dict[str, Any]:
    """``analysis.pairwise.pairwise_stats`` of a stored pairwise run."""
    run = store.get_run(run_id)
    scorer = run.scorers[0]["name"]
    records, errors = pairwise.judgements({c.id: c for c in store.run_cases(run)}, store.results(run.id, scorer))
    return pairwise.pairwise_stats(run.id, scorer, records, errors)
