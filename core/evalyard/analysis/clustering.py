"""Cases that share a group (questions on one passage, turns of one dialogue) are not independent
samples: ``--cluster metadata.FIELD`` names the case metadata that says which group a case is in,
and the statistics use cluster-robust standard errors (``stats.clustered_se``).

The database sums each cluster (GROUP BY the metadata field: ``store.queries.cluster_totals``), so
memory grows with the number of clusters, never with the cases. A case without the field is a
cluster of its own. Pure functions over those totals; ``figures.clusters.cluster_run`` reads and keeps them.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import InputError

PREFIX = "metadata."


def parse_cluster(text: str, option: str = "--cluster") -> tuple[str, ...]:
    """``metadata.passage`` -> ("passage",); ``metadata.source.doc`` -> ("source", "doc")."""
    parts = tuple(text[len(PREFIX):].split(".")) if text.startswith(PREFIX) else ()
    # a line break or other control character in a key would split the messages that name it
    if not parts or not all(parts) or not text.isprintable():
        raise InputError(f"{option} {text!r}: expected metadata.FIELD (a key of the cases' metadata)")
    return parts


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


def describe_scorer(field: str, summary: dict[str, Any], totals: list[tuple[int, float]],
                    with_field: int) -> dict[str, Any] | None:
    """``describe`` of one scorer of a finished run, its naive figures taken from the run's stored
    ``summary`` (std / sqrt(n), the stored interval)."""
    std, n = summary.get("std"), summary.get("scored") or 0
    return describe(field, totals, with_field, std / math.sqrt(n) if std is not None and n else None,
                    summary.get("ci95"))


def kept_field(run) -> str | None:
    """The ``metadata.FIELD`` a run was clustered by (``run --cluster``), if any."""
    for summary in ((run.totals or {}).get("scorers") or {}).values():
        if (summary.get("clustered") or {}).get("field"):
            return summary["clustered"]["field"]
    return None
