"""Summary statistics: the bootstrap interval, exact for 0/1 data and sampled otherwise."""

from __future__ import annotations

import subprocess
import sys
from math import comb
from types import SimpleNamespace

import numpy as np
import pytest

from evalyard.analysis.stats import bootstrap_ci, summarize


def _binomial_percentiles(n: int, successes: int) -> tuple[float, float]:
    """Brute force with exact integer binomials: smallest k with CDF >= 2.5% / 97.5%."""
    p = successes / n
    cdf, low, high = 0.0, None, None
    for k in range(n + 1):
        cdf += comb(n, k) * p**k * (1 - p) ** (n - k)
        if low is None and cdf >= 0.025 - 1e-12:
            low = k
        if high is None and cdf >= 0.975 - 1e-12:
            high = k
    return low / n, high / n


@pytest.mark.parametrize("n,successes", [(2, 1), (7, 3), (20, 10), (20, 11), (60, 59), (164, 150), (500, 17)])
def test_binary_interval_is_the_exact_bootstrap_percentile(n, successes):
    values = [1.0] * successes + [0.0] * (n - successes)
    assert bootstrap_ci(values) == _binomial_percentiles(n, successes)


def test_binary_interval_matches_a_large_resample():
    rng = np.random.default_rng(7)
    values = [1.0] * 130 + [0.0] * 34
    data = np.asarray(values)
    means = data[rng.integers(0, len(values), size=(100_000, len(values)))].mean(axis=1)
    sampled = np.quantile(means, [0.025, 0.975], method="inverted_cdf")
    assert bootstrap_ci(values) == pytest.approx(tuple(sampled), abs=1 / len(values))


def test_constant_and_degenerate_inputs():
    assert bootstrap_ci([1.0] * 50) == (1.0, 1.0)
    assert bootstrap_ci([0.0] * 50) == (0.0, 0.0)
    assert bootstrap_ci([1.0]) is None
    assert bootstrap_ci([]) is None


def test_large_binary_run_is_fast_enough_and_sane():
    values = [1.0] * 70_000 + [0.0] * 30_000
    low, high = bootstrap_ci(values)
    assert low < 0.7 < high and high - low < 0.01


def test_non_binary_values_use_the_seeded_resample():
    values = [0.1, 0.5, 0.9, 0.3, 0.7, 0.2, 0.8]
    first, second = bootstrap_ci(values), bootstrap_ci(values)
    assert first == second
    assert min(values) <= first[0] < sum(values) / len(values) < first[1] <= max(values)


def test_summary_of_pass_fail_results_does_not_import_numpy():
    code = (
        "import sys\n"
        "from types import SimpleNamespace as R\n"
        "from evalyard.analysis.stats import summarize\n"
        "rows = [R(value=float(i % 3 != 0), label=None, passed=None, error=None) for i in range(100)]\n"
        "summarize(rows)\n"
        "print('numpy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_summarize_counts_errors_apart():
    rows = [SimpleNamespace(value=1.0, label="pass", passed=True, error=None),
            SimpleNamespace(value=0.0, label="fail", passed=False, error=None),
            SimpleNamespace(value=None, label=None, passed=None, error="boom")]
    stats = summarize(rows)
    assert (stats["count"], stats["scored"], stats["errors"]) == (3, 2, 1)
    assert stats["mean"] == 0.5 and stats["pass_rate"] == 0.5
    assert stats["labels"] == {"fail": 1, "pass": 1}


def test_the_wilson_interval_of_a_share_with_ties_counted_half():
    from evalyard.analysis.stats import wilson_ci

    low, high = wilson_ci(4, 8)  # 8 ties, each half a win
    assert (round(low, 4), round(high, 4)) == (0.2152, 0.7848)
    assert wilson_ci(8, 8)[1] == 1.0 and 0.67 < wilson_ci(8, 8)[0] < 0.68  # all won: [0.676, 1]
    assert wilson_ci(0, 0) is None
