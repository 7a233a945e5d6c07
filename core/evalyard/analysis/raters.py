"""Agreement among several raters (people reviewing the same cases, or the judges of a jury):
Cohen's kappa for two, Fleiss' kappa and Krippendorff's alpha for more, each with a 95%
bootstrap interval over cases (``stats.bootstrap``, the one bootstrap).

Ratings come as ``{case_id: {rater: category}}``; a rater who did not rate a case is simply
absent. Missing ratings are handled as the reference packages do, since each statistic has its
own rule:

- Cohen's kappa (``agreement.cohen_kappa``, the one implementation) uses the cases both raters
  rated, as a contingency table of their ratings does (statsmodels ``cohens_kappa``);
- Fleiss' kappa needs every rater on every case (statsmodels ``fleiss_kappa`` asserts a complete
  table), so it uses the cases every rater rated, and says how many those are;
- Krippendorff's alpha was made for missing data: a case counts with the ratings it has, when it
  has at least two (the ``krippendorff`` package's coincidence matrix).

Alpha is nominal, or ordinal over an ``order`` of the categories (Krippendorff 2011, "Computing
Krippendorff's alpha-reliability": the ordinal distance between two categories grows with how many
ratings fall between them).
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, Mapping, Sequence

from .agreement import cohen_kappa
from .stats import bootstrap

Ratings = Mapping[str, Mapping[str, str]]


def count_table(ratings: Ratings, categories: Sequence[str]) -> Any:
    """cases x categories: how many raters put each case in each category (numpy, int)."""
    import numpy as np

    column = {c: j for j, c in enumerate(categories)}
    table = np.zeros((len(ratings), len(categories)), dtype=np.int64)
    for i, by_rater in enumerate(ratings.values()):
        for category in by_rater.values():
            table[i, column[category]] += 1
    return table


def fleiss_kappa(table: Any) -> float | None:
    """Fleiss' (1971) kappa of a cases x categories count table with the same number of raters on
    every case (the statsmodels formula, ``method='fleiss'``); None when undefined (fewer than two
    raters, or every rating in one category)."""
    import numpy as np

    table = np.asarray(table, dtype=float)
    if table.size == 0:
        return None
    raters = table.sum(axis=1)
    m = raters[0]
    if m < 2 or np.any(raters != m):
        return None
    p_category = table.sum(axis=0) / table.sum()
    observed = ((table * table).sum(axis=1) - m) / (m * (m - 1))
    expected = float((p_category * p_category).sum())
    if expected >= 1.0:
        return None
    return (float(observed.mean()) - expected) / (1 - expected)


def _distances(level: str, marginals: Any) -> Any:
    """delta^2 between categories (in the table's column order): nominal 0/1, or ordinal from the
    coincidence marginals, (sum of n_g for g from c to k - (n_c + n_k) / 2)^2."""
    import numpy as np

    k = len(marginals)
    if level == "nominal":
        return 1.0 - np.eye(k)
    cumulative = np.concatenate([[0.0], np.cumsum(marginals)])
    low, high = np.minimum.outer(np.arange(k), np.arange(k)), np.maximum.outer(np.arange(k), np.arange(k))
    between = cumulative[high + 1] - cumulative[low]
    return (between - (marginals[low] + marginals[high]) / 2) ** 2


def alpha_from_table(table: Any, level: str = "nominal") -> float | None:
    """Krippendorff's alpha of a cases x categories count table (categories in their order, for
    ``level='ordinal'``). Cases with fewer than two ratings are not pairable and drop out. None
    when undefined (no pairable case, or no variation to disagree about)."""
    import numpy as np

    table = np.asarray(table, dtype=float)
    if level not in ("nominal", "ordinal"):
        raise ValueError(f"level {level!r}: expected nominal or ordinal")
    per_case = table.sum(axis=1) if table.size else np.zeros(0)
    pairable = table[per_case >= 2]
    if len(pairable) == 0:
        return None
    weights = 1.0 / (pairable.sum(axis=1) - 1)
    # o_ck = sum over cases of (pairs of c and k within the case) / (ratings of the case - 1)
    coincidences = (pairable.T * weights) @ pairable - np.diag((pairable * weights[:, None]).sum(axis=0))
    marginals = coincidences.sum(axis=1)
    n = marginals.sum()
    delta = _distances(level, marginals)
    expected = float((np.outer(marginals, marginals) * delta).sum())
    if expected == 0.0:
        return None
    return 1.0 - (n - 1) * float((coincidences * delta).sum()) / expected


def krippendorff_alpha(ratings: Ratings, categories: Sequence[str], level: str = "nominal") -> float | None:
    return alpha_from_table(count_table(ratings, categories), level)


def _pair_kappa(ratings: Ratings, first: str, second: str) -> dict[str, Any]:
    both = [(r[first], r[second]) for r in ratings.values() if first in r and second in r]
    a, b = [x for x, _ in both], [y for _, y in both]
    return {"raters": [first, second], "cases": len(both), "kappa": cohen_kappa(a, b),
            "ci95": bootstrap(lambda rows: cohen_kappa([a[i] for i in rows], [b[i] for i in rows]), len(both))}


def rater_agreement(ratings: Ratings, categories: Sequence[str], *, ordered: Sequence[str] | None = None,
                    ordinal_of: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Every agreement figure for these ratings, each with its 95% bootstrap interval over cases.

    ``cohen``: one entry per pair of raters (one pair when there are two); ``fleiss``: over the cases
    every rater rated; ``alpha_nominal`` over ``categories``; with ``ordered`` (the categories of an
    ordered scale, low to high) and ``ordinal_of`` (each category's place on it), ``alpha_ordinal``."""
    raters = sorted({r for by_rater in ratings.values() for r in by_rater})
    out: dict[str, Any] = {"raters": raters, "cases": len(ratings), "categories": list(categories),
                           "cohen": [_pair_kappa(ratings, a, b) for a, b in combinations(raters, 2)]}
    complete = {case: r for case, r in ratings.items() if len(r) == len(raters)}
    full = count_table(complete, categories)
    out["fleiss"] = {"cases": len(complete), "raters": len(raters), "kappa": fleiss_kappa(full),
                     "ci95": bootstrap(lambda rows: fleiss_kappa(full[rows]), len(complete))
                     if len(raters) >= 2 else None,
                     "missing": "cases without every rater are left out (a complete table, as statsmodels)"}
    table = count_table(ratings, categories)
    pairable = int((table.sum(axis=1) >= 2).sum())
    out["alpha_nominal"] = {"cases": pairable, "alpha": alpha_from_table(table),
                            "ci95": bootstrap(lambda rows: alpha_from_table(table[rows]), len(table))}
    if ordered is not None and ordinal_of is not None:
        placed = {case: {rater: ordinal_of[c] for rater, c in r.items()} for case, r in ratings.items()}
        scale = count_table(placed, ordered)
        out["alpha_ordinal"] = {"cases": pairable, "scale": list(ordered), "alpha": alpha_from_table(scale, "ordinal"),
                                "ci95": bootstrap(lambda rows: alpha_from_table(scale[rows], "ordinal"), len(scale))}
    return out
