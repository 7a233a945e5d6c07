"""Which cases a blind review offers, which side each run is shown on, and how many reviews a
target interval needs: pure functions for ``evalyard review BASE NEW``.

- **Sides**: per case and per reviewer, from a keyed hash of the session's secret (HMAC-SHA256):
  random to anyone without the secret, and the same again when the session resumes.
- **The sample**: people's time is the scarce thing, so the informative cases come first. With
  ``informative`` (the default), the cases are split into strata by what the runs' scores say:
  NEW scored higher, BASE scored higher, or the scores agree (or there are none); the two strata
  where the scores disagree are drawn from in turn, each in a seeded random order (a hash of seed and case id), then the
  cases where they agree. ``uniform`` draws every case with the same chance (a seeded shuffle):
  its win rate estimates the whole suite's, which the informative sample does not (it
  over-weights the cases where the runs differ).
- **Sample size**: the reviews a 95% interval of a given half-width on the win rate needs in the
  worst case (a win rate near 50%, no ties, one reviewer per case): n = z^2 p (1 - p) / h^2.
"""

from __future__ import annotations

import hashlib
import hmac
import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Iterable

#: The strata of the informative sample, in the order they are drawn from.
STRATA = ("new scored higher", "base scored higher", "scores agree")


def left_side(secret: str, reviewer: str, case_id: str) -> str:
    """"base" or "new": the run shown on the left (A) for this reviewer and case."""
    digest = hmac.new(secret.encode("utf-8"), f"{reviewer}\0{case_id}".encode("utf-8"), hashlib.sha256).digest()
    return "new" if digest[0] & 1 else "base"


@dataclass(frozen=True)
class Drawn:
    case_id: str
    stratum: str  # kept with the session, never shown on the page (it would say which run is which)


def stratum(deltas: Iterable[float]) -> str:
    """A case's stratum from its per-scorer deltas (NEW minus BASE, turned so positive is better)."""
    net = sum((d > 0) - (d < 0) for d in deltas)
    return STRATA[0] if net > 0 else STRATA[1] if net < 0 else STRATA[2]


def _spread(seed: int, case_id: str) -> bytes:
    """A seeded random order of case ids (a hash, so the order does not depend on the input's order:
    resampling in ``analysis`` goes through ``stats``; this is an ordering, not a resample)."""
    return hashlib.sha256(f"{seed}\0{case_id}".encode("utf-8")).digest()


def draw(case_ids: list[str], deltas: dict[str, list[float]], size: int, *, seed: int = 0,
         uniform: bool = False) -> list[Drawn]:
    """Up to ``size`` of ``case_ids`` (the cases both runs answered) in the order to offer them."""
    def shuffled(ids: list[str]) -> list[str]:
        return sorted(ids, key=lambda case_id: _spread(seed, case_id))

    if uniform:
        return [Drawn(c, "uniform") for c in shuffled(list(case_ids))[:size]]
    groups: dict[str, list[str]] = {name: [] for name in STRATA}
    for case_id in case_ids:
        groups[stratum(deltas.get(case_id, []))].append(case_id)
    groups = {name: shuffled(members) for name, members in groups.items()}
    out: list[Drawn] = []
    disagreeing = [groups[STRATA[0]], groups[STRATA[1]]]
    while len(out) < size and any(disagreeing):  # in turn, so neither direction crowds the other out
        for name, members in zip(STRATA[:2], disagreeing):
            if members and len(out) < size:
                out.append(Drawn(members.pop(0), name))
    out += [Drawn(c, STRATA[2]) for c in groups[STRATA[2]][:size - len(out)]]
    return out


def reviews_needed(half_width: float, level: float = 0.95, p: float = 0.5) -> int:
    """Reviews for a ``level`` interval of +/- ``half_width`` on a win rate near ``p``."""
    if not 0 < half_width < 1:
        raise ValueError(f"half-width {half_width}: expected a number between 0 and 1")
    z = NormalDist().inv_cdf(0.5 + level / 2)
    return math.ceil(z * z * p * (1 - p) / (half_width * half_width))
