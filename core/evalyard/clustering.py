"""Cases that share a group (questions on one passage, turns of one dialogue) are not independent
samples: ``--cluster metadata.FIELD`` names the case metadata that says which group a case is in,
and the statistics use cluster-robust standard errors (``stats.clustered_se``).

The database sums each cluster (GROUP BY the metadata field), so memory grows with the number of
clusters, never with the cases. A case without the field is a cluster of its own.
"""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import and_, case, func, select
from sqlalchemy.orm import Session, aliased

from .errors import InputError
from .store.models import CaseRow, ResultRow, RunRow

PREFIX = "metadata."


def parse_cluster(text: str, option: str = "--cluster") -> tuple[str, ...]:
    """``metadata.passage`` -> ("passage",); ``metadata.source.doc`` -> ("source", "doc")."""
    parts = tuple(text[len(PREFIX):].split(".")) if text.startswith(PREFIX) else ()
    if not parts or not all(parts):
        raise InputError(f"{option} {text!r}: expected metadata.FIELD (a key of the cases' metadata)")
    return parts


def _cluster_of(path: tuple[str, ...]):
    column = CaseRow.case_metadata[path[0] if len(path) == 1 else path]
    return column.as_string()


def _grouped(query, path: tuple[str, ...], case_id, suite_id: int):
    """``query`` joined to the suite's cases and grouped by cluster: a case without the field
    groups on its own id (the second key is NULL for every case that has one)."""
    cluster = _cluster_of(path)
    alone = case((cluster.is_(None), case_id), else_=None)
    return (query.outerjoin(CaseRow, and_(CaseRow.suite_id == suite_id, CaseRow.case_id == case_id))
            .group_by(cluster, alone).add_columns(func.count(cluster)))


def _totals(store, query) -> tuple[list[tuple[int, float]], int]:
    """Each cluster's (count, sum), and how many of the cases had the field."""
    with store.engine.connect() as connection:
        rows = connection.execute(query).all()
    return [(n, s) for n, s, _ in rows], sum(with_field for _, _, with_field in rows)


def run_cluster_totals(store, run, scorer: str, path: tuple[str, ...]):
    """(count, sum) of one scorer's values per cluster of ``run``'s cases, and how many cases had
    the field: errors and missing values are left out, as the mean leaves them out."""
    query = (select(func.count(), func.sum(ResultRow.value)).select_from(ResultRow)
             .where(ResultRow.run_id == run.id, ResultRow.scorer == scorer, ResultRow.error.is_(None),
                    ResultRow.value.is_not(None)))
    return _totals(store, _grouped(query, path, ResultRow.case_id, run.suite_id))


def paired_cluster_totals(store, base_id: str, new_run, scorer: str, path: tuple[str, ...]):
    """(count, sum of NEW - BASE) per cluster over the cases both runs scored; the clusters are the
    NEW run's case metadata."""
    base, new = aliased(ResultRow), aliased(ResultRow)
    query = (select(func.count(), func.sum(new.value - base.value)).select_from(new)
             .join(base, and_(base.run_id == base_id, base.scorer == scorer, base.case_id == new.case_id))
             .where(new.run_id == new_run.id, new.scorer == scorer, new.error.is_(None), new.value.is_not(None),
                    base.error.is_(None), base.value.is_not(None)))
    return _totals(store, _grouped(query, path, new.case_id, new_run.suite_id))


def describe(field: str, totals: list[tuple[int, float]], with_field: int, naive_se: float | None,
             naive_ci: list[float] | None, level: float = 0.95) -> dict[str, Any] | None:
    """The clustered figures beside the naive ones: mean, SE, the t interval on G - 1 degrees of
    freedom, and the design effect (the clustered variance over the naive one)."""
    from .stats import clustered_se, t_quantile

    found = clustered_se(totals)
    if found is None:
        return None
    mean, se, clusters = found
    half = t_quantile(level, clusters - 1) * se
    return {"field": field, "clusters": clusters, "cases_with_field": with_field, "mean": mean, "se": se,
            "ci95": [mean - half, mean + half], "naive_se": naive_se, "naive_ci95": naive_ci,
            "design_effect": (se / naive_se) ** 2 if naive_se else None}


def cluster_run(store, run_id: str, field: str) -> dict[str, Any]:
    """Every scorer's clustered summary of a finished run, by scorer, kept beside its other
    statistics in the run's totals (``totals["scorers"][name]["clustered"]``) so ``runs show``
    and the report show them later."""
    path = parse_cluster(field)
    run = store.get_run(run_id)
    totals = dict(run.totals or {})
    scorers = totals.get("scorers") or {}
    out: dict[str, Any] = {}
    for spec in run.scorers or []:
        name = spec["name"]
        summary = scorers.get(name) or {}
        groups, with_field = run_cluster_totals(store, run, name, path)
        if groups and not with_field:
            raise InputError(f"--cluster: no case of run {run.id} has {field} (the run is kept)")
        std, n = summary.get("std"), summary.get("scored") or 0
        view = describe(field, groups, with_field, std / math.sqrt(n) if std is not None and n else None,
                        summary.get("ci95"))
        if view is not None:
            out[name] = view
    with Session(store.engine) as session:
        row = session.get(RunRow, run.id)
        stored = dict(row.totals or {})
        stored["scorers"] = {name: {**summary, **({"clustered": out[name]} if name in out else {})}
                             for name, summary in (stored.get("scorers") or {}).items()}
        row.totals = stored
        session.add(row)
        session.commit()
    return out


def kept_field(run) -> str | None:
    """The ``metadata.FIELD`` a run was clustered by (``run --cluster``), if any."""
    for summary in ((run.totals or {}).get("scorers") or {}).values():
        if (summary.get("clustered") or {}).get("field"):
            return summary["clustered"]["field"]
    return None
