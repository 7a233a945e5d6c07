"""A simulated review with known preferences: 200 cases by 3 reviewers, sides drawn at random per
case and reviewer. The shown intervals must hold the true win rate, and each reviewer's true
left share, in at least 90 of 100 seeds.

The model of a review: each case has its own chance that NEW's answer is the better one (drawn
from a Beta distribution whose mean is the true preference), so the verdicts of one case's
reviewers go together and the win rate's interval has to be clustered by case. A reviewer skips
a case with probability 0.15, calls a tie or both bad with their own rate, and, on a decisive
verdict, picks the left side regardless with their own lapse rate, else the better answer.
"""

from __future__ import annotations

import numpy as np

from evalyard.analysis.reviews import Review, position_bias, win_rate

CASES, SEEDS = 200, 100
PREFERENCE = (1.3, 0.7)  # Beta(a, b) of a case's P(NEW better): mean 0.65, widely spread
REVIEWERS = {"ann": (0.10, 0.00), "bob": (0.25, 0.20), "cy": (0.40, 0.45)}  # (tie rate, left lapse)
SKIP = 0.15


def truth() -> tuple[float, dict[str, float]]:
    """The win rate every verdict's expectation gives (each reviewer sees every case alike) and each
    reviewer's expected left share of decisive verdicts."""
    preferred = PREFERENCE[0] / sum(PREFERENCE)
    rates = [0.5 * tie + (1 - tie) * (lapse * 0.5 + (1 - lapse) * preferred) for tie, lapse in REVIEWERS.values()]
    return sum(rates) / len(rates), {name: lapse + (1 - lapse) * 0.5 for name, (_, lapse) in REVIEWERS.items()}


def simulate(seed: int) -> list[Review]:
    rng = np.random.default_rng(seed)
    p_new = rng.beta(*PREFERENCE, size=CASES)
    out = []
    for name, (tie, lapse) in REVIEWERS.items():
        shown = rng.random(CASES) >= SKIP
        new_left = rng.random(CASES) < 0.5
        undecided = rng.random(CASES) < tie
        both_bad = rng.random(CASES) < 0.5
        lapsed = rng.random(CASES) < lapse
        new_better = rng.random(CASES) < p_new
        for c in np.flatnonzero(shown):
            left, right = ("new", "base") if new_left[c] else ("base", "new")
            if undecided[c]:
                verdict = "both_bad" if both_bad[c] else "tie"
            elif lapsed[c]:
                verdict = "A"
            else:
                verdict = "A" if new_better[c] == new_left[c] else "B"
            out.append(Review(f"c{c}", name, left, right, verdict))
    return out


def test_the_intervals_recover_the_known_preferences_in_90_of_100_seeds():
    true_rate, true_left = truth()
    covered = {"win rate": 0, **{name: 0 for name in REVIEWERS}}
    for seed in range(SEEDS):
        verdicts = simulate(seed)
        low, high = win_rate(verdicts)["ci95"]
        covered["win rate"] += low <= true_rate <= high
        for name, figure in position_bias(verdicts).items():
            covered[name] += figure["ci95"][0] <= true_left[name] <= figure["ci95"][1]
    print(f"seeds recovered out of {SEEDS}: {covered}")
    assert all(count >= 90 for count in covered.values()), covered
