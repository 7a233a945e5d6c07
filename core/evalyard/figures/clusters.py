"""A finished run's clustered figures (``--cluster``, a suite's ``cluster:``): the store's
per-cluster totals handed to ``analysis.clustering``, and kept with the run's totals."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..analysis import clustering
from ..errors import InputError

if TYPE_CHECKING:
    from ..store import Store


def cluster_run(store: "Store", run_id: str, field: str) -> dict[str, Any]:
    """Every scorer's clustered summary of a finished run, by scorer, kept beside its other
    statistics in the run's totals (``totals["scorers"][name]["clustered"]``) so ``runs show``
    and the report show them later."""
    from ..store.queries import add_to_scorer_totals, cluster_totals

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
