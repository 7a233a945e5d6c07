"""A Bradley-Terry ranking of several systems from pairwise verdicts, as Chatbot Arena reports it.

Each verdict is a battle between the system on the left and the one on the right (a
``reviews.Review``, or any object with ``left``, ``right`` and ``verdict``). The model: P(i beats
j) = 1 / (1 + 10^((R_j - R_i) / 400)), fitted by maximum likelihood (Newton's method) with
no prior, as Arena's ``compute_mle_elo`` fits its logistic regression without a penalty.

- **Ties**, *both bad* included, count as half a win for each side: Arena gives every win a
  weight of 2 and every tie (its "tie" and "tie (bothbad)") a weight of 1 in each direction.
- **Scale**: 400 points per factor of 10 in the odds, the ratings' mean at 1000 (what Arena's
  unpenalised fit gives before it shifts its scale to an anchor model).
- **Intervals**: Arena's bootstrap: the battles resampled with replacement and the model refitted
  (1000 rounds), each rating's 2.5% and 97.5% quantiles; ``rank`` is Arena's "rank (UB)", 1 +
  the number of systems whose lower bound is above this one's upper bound.
- A system with no win nor tie (or one that never lost nor tied) has no finite rating: the fit
  needs every system to be reachable from every other through wins and ties (Ford 1957). Such
  a ranking is refused with the reason; such a resample is left out of the bootstrap.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from .stats import bootstrap

SCALE, BASE, INITIAL = 400.0, 10.0, 1000.0
BOOTSTRAP_ROUNDS = 1000


def _outcome(verdict: str) -> float:
    """The left side's share of the win: A 1, B 0, a tie or both bad 0.5."""
    return {"A": 1.0, "B": 0.0}.get(verdict, 0.5)


def _connected(wins: Any) -> bool:
    """Every system reaches every other along edges i -> j where i took something from j."""
    k = len(wins)
    for start in range(k):
        seen, todo = {start}, [start]
        while todo:
            i = todo.pop()
            for j in range(k):
                if j not in seen and wins[i, j] > 0:
                    seen.add(j)
                    todo.append(j)
        if len(seen) < k:
            return False
    return True


def fit(left: Any, right: Any, outcome: Any, k: int) -> Any | None:
    """Ratings (numpy array of k) from battles given as index arrays and the left side's outcome;
    None when the maximum-likelihood ratings are not finite."""
    import numpy as np

    wins = np.zeros((k, k))  # wins[i, j]: what i took from j (ties half)
    np.add.at(wins, (left, right), outcome)
    np.add.at(wins, (right, left), 1.0 - outcome)
    if not _connected(wins):
        return None
    games = wins + wins.T
    theta = np.zeros(k)  # natural-log strengths, kept summing to zero
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # p[i, j] = P(i beats j)
        gradient = (wins - games * p).sum(axis=1)
        weight = games * p * (1 - p)
        hessian = np.diag(weight.sum(axis=1)) - weight  # minus the log-likelihood's Hessian
        step = np.linalg.lstsq(hessian, gradient, rcond=None)[0]  # singular along the common shift
        step -= step.mean()
        theta += step
        if np.abs(step).max() < 1e-10:
            break
    return INITIAL + SCALE / math.log(BASE) * (theta - theta.mean())


def bradley_terry(battles: Sequence[Any], *, rounds: int = BOOTSTRAP_ROUNDS) -> dict[str, Any]:
    """The ranking: per system its rating, 95% bootstrap interval, rank (UB) and battles, best first."""
    import numpy as np

    systems = sorted({b.left for b in battles} | {b.right for b in battles})
    index = {s: i for i, s in enumerate(systems)}
    left = np.array([index[b.left] for b in battles], dtype=int)
    right = np.array([index[b.right] for b in battles], dtype=int)
    outcome = np.array([_outcome(b.verdict) for b in battles], dtype=float)
    out: dict[str, Any] = {"battles": len(battles), "systems": [], "ties": "half a win each (both bad too), as "
                           "Chatbot Arena", "note": None}
    if len(systems) < 2:
        out["note"] = "fewer than two systems"
        return out
    ratings = fit(left, right, outcome, len(systems))
    if ratings is None:
        out["note"] = ("no finite ratings: some system never won or tied against the others (or never lost "
                       "or tied); review more pairs")
        return out

    def refit(rows: list[int]) -> Any:
        found = fit(left[rows], right[rows], outcome[rows], len(systems))
        return None if found is None else found.tolist()

    intervals = bootstrap(refit, len(battles), samples=rounds) or [None] * len(systems)
    counts = np.bincount(np.concatenate([left, right]), minlength=len(systems))
    rows = [{"system": s, "rating": float(ratings[i]), "ci95": intervals[i], "battles": int(counts[i])}
            for i, s in enumerate(systems)]
    for row in rows:
        above = [r for r in rows if r["ci95"] and row["ci95"] and r["ci95"][0] > row["ci95"][1]]
        row["rank"] = 1 + len(above)
    out["systems"] = sorted(rows, key=lambda r: -r["rating"])
    return out
