"""What people's side-by-side reviews of two runs say, with their uncertainty.

A review is one reviewer's verdict on one case, shown with one run on the left (side A) and the
other on the right (side B), the sides drawn at random per case and per reviewer. The verdicts are
``A`` (the left answer is better), ``B`` (the right one), ``tie`` (as good as each other) and
``both_bad`` (neither is acceptable). A verdict says nothing about BASE or NEW until it is mapped
back through the side each run was shown on (``winner``).

From the reviews:

- the **win rate** of NEW over BASE: NEW better 1, BASE better 0, tie 0.5, and *both bad* 0.5
  too: it prefers neither answer (it judges their quality, not their order), so it counts as a
  tie, as Chatbot Arena counts its "tie (bothbad)". Its interval is clustered by case (the
  cluster-robust standard error of ``stats.clustered_se``, t on G - 1 degrees of freedom): the
  reviewers of one case saw the same two answers, so their verdicts are not independent; with
  one reviewer per case it is the ordinary standard error. Where every verdict is the same the
  interval is Wilson's, as elsewhere (no spread is not certainty);
- each reviewer's **position bias**: of their decisive verdicts (A or B), the share that went to
  the left side, with its Wilson interval and the exact binomial test against 50% (the sides were
  drawn at random, so an unbiased reviewer's left share is 50% whatever the runs' quality);
- the reviewers' **agreement** (``raters.rater_agreement``) on the verdicts mapped to BASE/NEW:
  nominal over the four verdicts, and ordinal over the preference scale BASE better < equal < NEW
  better, where *both bad* sits at equal for the same reason as in the win rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from .raters import rater_agreement
from .stats import binomial_test, clustered_se, t_quantile, wilson_ci

VERDICTS = ("A", "B", "tie", "both_bad")
#: The verdicts in the BASE/NEW frame (agreement is measured there: the sides differ per reviewer).
MAPPED = ("base", "new", "tie", "both_bad")
#: The ordered preference scale of the ordinal alpha, low to high, and each mapped verdict's place on it.
SCALE = ("base", "equal", "new")
ON_SCALE = {"base": "base", "new": "new", "tie": "equal", "both_bad": "equal"}


@dataclass(frozen=True)
class Review:
    """One reviewer's verdict on one case: ``left`` and ``right`` name the systems shown as A and B
    (``"base"`` and ``"new"`` for a review of two runs; any names for several systems)."""

    case_id: str
    reviewer: str
    left: str
    right: str
    verdict: str

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r}: expected one of {', '.join(VERDICTS)}")
        if self.left == self.right:
            raise ValueError(f"case {self.case_id!r}: the same system {self.left!r} on both sides")


def winner(review: Review) -> str | None:
    """The system the verdict prefers, None for a tie or both bad."""
    return {"A": review.left, "B": review.right}.get(review.verdict)


def score(review: Review, system: str) -> float:
    """1 when ``system`` won, 0 when it lost, 0.5 for a tie or both bad."""
    found = winner(review)
    return 0.5 if found is None else float(found == system)


def mapped(review: Review, new: str = "new") -> str:
    """The verdict in the BASE/NEW frame: ``new``, ``base``, ``tie`` or ``both_bad``."""
    found = winner(review)
    if found is None:
        return review.verdict
    return "new" if found == new else "base"


def _pair(reviews: Iterable[Review], base: str, new: str) -> list[Review]:
    return [r for r in reviews if {r.left, r.right} == {base, new}]


def win_rate(reviews: Iterable[Review], *, base: str = "base", new: str = "new", level: float = 0.95) -> dict[str, Any]:
    """The win rate of NEW over BASE (ties and both bad count half) with its interval clustered by case."""
    chosen = _pair(reviews, base, new)
    counts = {"new": 0, "base": 0, "tie": 0, "both_bad": 0}
    totals: dict[str, list[float]] = {}
    for r in chosen:
        counts[mapped(r, new)] += 1
        entry = totals.setdefault(r.case_id, [0, 0.0])
        entry[0] += 1
        entry[1] += score(r, new)
    out: dict[str, Any] = {"reviews": len(chosen), "cases": len(totals), "wins": counts["new"],
                           "losses": counts["base"], "ties": counts["tie"], "both_bad": counts["both_bad"],
                           "win_rate": None, "ci95": None, "ci_method": None}
    if not chosen:
        return out
    total = sum(s for _, s in totals.values())
    out["win_rate"] = total / len(chosen)
    found = clustered_se((n, s) for n, s in totals.values())
    if found is None or found[1] == 0.0:  # one case, or every verdict the same: Wilson's interval
        ci = wilson_ci(total, len(chosen), level)
        out["ci95"], out["ci_method"] = (list(ci) if ci else None), "wilson"
        return out
    mean, se, clusters = found
    half = t_quantile(level, clusters - 1) * se
    out["ci95"] = [max(0.0, mean - half), min(1.0, mean + half)]
    out["ci_method"] = "clustered by case" if clusters < len(chosen) else "independent cases"
    return out


def position_bias(reviews: Iterable[Review], level: float = 0.95) -> dict[str, dict[str, Any]]:
    """Per reviewer: of the decisive verdicts, the share that went to the left side (A), its Wilson
    interval and the two-sided exact binomial p-value against 50%."""
    by_reviewer: dict[str, list[int]] = {}
    for r in reviews:
        counts = by_reviewer.setdefault(r.reviewer, [0, 0, 0])  # left won, right won, neither
        counts[{"A": 0, "B": 1}.get(r.verdict, 2)] += 1
    out = {}
    for reviewer, (left, right, neither) in sorted(by_reviewer.items()):
        decisive = left + right
        ci = wilson_ci(left, decisive, level)
        out[reviewer] = {"reviews": decisive + neither, "decisive": decisive, "left_won": left,
                         "left_share": left / decisive if decisive else None, "ci95": list(ci) if ci else None,
                         "p": binomial_test(left, decisive)}
    return out


def reviewer_agreement(reviews: Iterable[Review], *, base: str = "base", new: str = "new") -> dict[str, Any]:
    """``raters.rater_agreement`` of the reviewers' verdicts mapped to BASE/NEW (one verdict per
    reviewer and case: a later one replaces an earlier)."""
    ratings: dict[str, dict[str, str]] = {}
    for r in _pair(reviews, base, new):
        ratings.setdefault(r.case_id, {})[r.reviewer] = mapped(r, new)
    return rater_agreement(ratings, MAPPED, ordered=SCALE, ordinal_of=ON_SCALE)


def review_summary(reviews: Sequence[Review], *, base: str = "base", new: str = "new") -> dict[str, Any]:
    """Everything above for one BASE/NEW review."""
    return {"win_rate": win_rate(reviews, base=base, new=new), "position_bias": position_bias(reviews),
            "agreement": reviewer_agreement(reviews, base=base, new=new)}
