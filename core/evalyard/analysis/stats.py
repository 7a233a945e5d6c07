"""Summary statistics for one scorer's results, and paired comparison of two runs.

Errors are counted, never averaged in: the mean is over scored cases only.
Confidence intervals are percentile bootstraps with a fixed seed, so the same
results always print the same interval. When every value is 0 or 1 (pass/fail
scorers) the bootstrap distribution of the mean is known exactly -- it is
Binomial(n, mean) / n -- so its percentiles are computed instead of sampled:
no noise, and no numpy import on the CLI's path for the commonest scorers.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Callable, Iterable, Sequence

BOOTSTRAP_SAMPLES = 2000
SEED = 20241122


def _binomial_quantiles(n: int, successes: int, probabilities: Sequence[float]) -> list[int]:
    """The smallest k with P(X <= k) >= q, for X ~ Binomial(n, successes / n), per q (ascending)."""
    p = successes / n
    if p in (0.0, 1.0):
        return [successes] * len(probabilities)
    # pmf(k) in log space from lgamma (no overflow for large n), accumulated in order of k
    log_p, log_q = math.log(p), math.log1p(-p)
    log_n = math.lgamma(n + 1)
    def pmf(k: int) -> float:
        return math.exp(log_n - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * log_p + (n - k) * log_q)

    out, k = [], 0
    cumulative = pmf(0)  # P(X <= k)
    for q in probabilities:
        while cumulative < q - 1e-12 and k < n:
            k += 1
            cumulative += pmf(k)
        out.append(k)
    return out


def _resamples(n: int, samples: int):
    """``samples`` seeded draws of n case indices with replacement, as (k, n) blocks whose size
    bounds memory on large runs (samples x n indices)."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    chunk = max(1, min(samples, 2_000_000 // n))
    for start in range(0, samples, chunk):
        yield rng.integers(0, n, size=(min(samples, start + chunk) - start, n))


def bootstrap(statistic: Callable[[list[int]], Any], n: int, *, level: float = 0.95,
              samples: int = BOOTSTRAP_SAMPLES) -> Any:
    """Percentile-bootstrap interval of ``statistic(indices)`` over n cases resampled with
    replacement (Efron & Tibshirani 1993, ch. 13): the one bootstrap of evalyard, for any
    statistic (kappa, AUC, a refitted win rate); ``bootstrap_ci`` is its mean, vectorised.
    Resamples where the statistic is undefined (None) are left out, and None comes back when
    most are, or n < 2. Seeded: the same data give the same interval.

    A statistic with several components (one rating per system) returns a list; the answer is
    then a list of intervals, one per component, read from the same resamples (as Chatbot Arena
    reads its ratings' intervals from one set of refits)."""
    if n < 2:
        return None
    import numpy as np

    found = [value for block in _resamples(n, samples) for rows in block.tolist()
             if (value := statistic(rows)) is not None]
    if len(found) < samples / 2:
        return None
    alpha = (1 - level) / 2
    low, high = np.quantile(np.asarray(found, dtype=float), [alpha, 1 - alpha], axis=0)
    if np.ndim(low):
        return [[float(a), float(b)] for a, b in zip(low, high)]
    return [float(low), float(high)]


def bootstrap_ci(values: Sequence[float], level: float = 0.95, samples: int = BOOTSTRAP_SAMPLES) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean (None for fewer than two values): ``bootstrap``
    of the mean, computed on whole blocks of resamples at once."""
    n = len(values)
    if n < 2:
        return None
    alpha = (1 - level) / 2
    if all(v == 0 or v == 1 for v in values):  # exact: the resampled mean is Binomial(n, mean) / n
        low, high = _binomial_quantiles(n, int(sum(values)), [alpha, 1 - alpha])
        return low / n, high / n
    import numpy as np

    data = np.asarray(values, dtype=float)
    means = np.concatenate([data[idx].mean(axis=1) for idx in _resamples(n, samples)])
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(low), float(high)


def wilson_ci(successes: float, n: int, level: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval of a share (``successes`` may hold halves: ties counted half). Where
    every case had the same outcome the bootstrap has no spread and gives a zero-width interval;
    this one still says how little n cases tell."""
    if n < 1:
        return None
    from statistics import NormalDist

    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def binomial_test(successes: int, n: int, p: float = 0.5) -> float | None:
    """The exact two-sided binomial test (as R's ``binom.test`` and scipy's ``binomtest``): the
    probability, under Binomial(n, p), of every count no more likely than the one observed."""
    if n < 1:
        return None
    log = [math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
           + (k * math.log(p) if k else 0.0) + ((n - k) * math.log1p(-p) if n - k else 0.0) for k in range(n + 1)]
    observed = log[successes]
    # R's relative tolerance (1 + 1e-7 on the probability), so counts exactly as likely are not lost to rounding
    return min(1.0, sum(math.exp(x) for x in log if x <= observed + 1e-7))


#: Up to this many values a summary keeps them for a bootstrap interval; past it, it keeps running
#: moments only and gives the normal interval (see ``summarize``).
BOOTSTRAP_LIMIT = 20_000


def normal_ci(mean: float, std: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """mean +/- z * std / sqrt(n): the interval the bootstrap's converges to at large n."""
    from statistics import NormalDist

    half = NormalDist().inv_cdf(0.5 + level / 2) * std / math.sqrt(n)
    return mean - half, mean + half


def summarize(results: Iterable[Any]) -> dict[str, Any]:
    """Statistics over result rows with ``value``, ``label``, ``passed`` and ``error`` attributes,
    in one pass and bounded memory: a stream of millions of rows is fine.

    Up to ``BOOTSTRAP_LIMIT`` values the interval is the percentile bootstrap (exact for 0/1
    values); past it, the values are no longer kept and the interval is the normal one from
    the running mean and variance (Welford's update), which the bootstrap matches at that size
    (``benchmarks/RESULTS.md``, "Intervals at large n")."""
    values: list[float] | None = []
    labels: Counter[str] = Counter()
    count = errors = passed = judged = 0
    n, mean_run, m2 = 0, 0.0, 0.0
    low = high = None
    for r in results:
        count += 1
        if r.error is not None:
            errors += 1
            continue
        value = r.value
        if value is not None and not math.isnan(value):
            n += 1
            delta = value - mean_run
            mean_run += delta / n
            m2 += delta * (value - mean_run)
            low = value if low is None or value < low else low
            high = value if high is None or value > high else high
            if values is not None:
                values.append(value)
                if len(values) > BOOTSTRAP_LIMIT:
                    values = None
        if r.label is not None:
            labels[r.label] += 1
        if r.passed is not None:
            judged += 1
            passed += bool(r.passed)
    if values is None:
        return from_moments(count=count, errors=errors, scored=n, mean=mean_run, squares=m2, low=low, high=high,
                            judged=judged, passed=passed, labels=labels)
    # small enough: the figures as they always were
    mean = sum(values) / n if n else None
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else None
    return _summary(count, errors, n, mean, std, bootstrap_ci(values), low, high, judged, passed, labels)


def from_moments(*, count: int, errors: int, scored: int, mean: float, squares: float, low: float | None,
                 high: float | None, judged: int, passed: int, labels: dict[str, int]) -> dict[str, Any]:
    """A summary of more than ``BOOTSTRAP_LIMIT`` values from their count, mean and sum of squared
    deviations (kept while streaming, or computed by the database): the normal interval."""
    std = math.sqrt(squares / (scored - 1))
    return _summary(count, errors, scored, mean, std, normal_ci(mean, std, scored), low, high, judged, passed,
                    labels)


def _summary(count, errors, scored, mean, std, ci, low, high, judged, passed, labels) -> dict[str, Any]:
    return {
        "count": count,
        "scored": scored,
        "errors": errors,
        "mean": mean,
        "std": std,
        "ci95": list(ci) if ci else None,
        "min": low,
        "max": high,
        "pass_rate": passed / judged if judged else None,
        "passed": passed,
        "labels": dict(sorted(labels.items())) if labels else {},
    }


# -- clustered errors, paired tests, several scorers, power ------------------------------------
# Formulas and their sources are in docs/statistics.md.

def clustered_se(cluster_totals: Iterable[tuple[int, float]]) -> tuple[float, float, int] | None:
    """(mean, cluster-robust standard error of the mean, number of clusters) from each cluster's
    (count, sum of values): memory grows with the clusters, never with the cases.

    The variance is the sandwich (CR1) estimator for a mean, G/(G-1) * sum_c (S_c - n_c*mean)^2 / N^2
    (Miller 2024's clustered standard error, with the usual G/(G-1) small-sample factor of Cameron &
    Miller 2015): when
    every value of a cluster is the same, it is exactly the standard error of the G cluster means."""
    totals = [(n, s) for n, s in cluster_totals if n]
    clusters = len(totals)
    if clusters < 2:
        return None
    count = sum(n for n, _ in totals)
    mean = sum(s for _, s in totals) / count
    squares = sum((s - n * mean) ** 2 for n, s in totals)
    return mean, math.sqrt(clusters / (clusters - 1) * squares) / count, clusters


def _incomplete_beta(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction (modified
    Lentz), on the side of x where it converges fast."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _incomplete_beta(1.0 - x, b, a)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)) / a
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 10_000):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return front * fraction


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom."""
    if math.isinf(t):
        return 0.0
    return _incomplete_beta(df / (df + t * t), df / 2, 0.5)


def t_quantile(level: float, df: float) -> float:
    """The t with P(|T| <= t) = level (e.g. 2.262 for 0.95 and 9 df), by bisection."""
    low, high = 0.0, 1.0
    while t_two_sided_p(high, df) > 1 - level:
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        if t_two_sided_p(middle, df) > 1 - level:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def paired_test(mean: float, se: float, df: float) -> dict[str, float]:
    """The t test of a mean difference against zero: t = mean / se on ``df`` degrees of freedom
    (n - 1 pairs, or G - 1 clusters when clustered), and its two-sided p-value."""
    if se == 0:
        return {"t": 0.0 if mean == 0 else math.copysign(math.inf, mean), "df": df, "p": 1.0 if mean == 0 else 0.0}
    t = mean / se
    return {"t": t, "df": df, "p": t_two_sided_p(t, df)}


def holm(pvalues: dict[str, float]) -> dict[str, float]:
    """Holm's (1979) step-down adjustment: the k-th smallest of m p-values times (m - k + 1),
    never below the one before it, at most 1. Controls the chance of any false "different"."""
    order = sorted(pvalues, key=pvalues.get)
    m, running, out = len(order), 0.0, {}
    for k, name in enumerate(order):
        running = max(running, min(1.0, (m - k) * pvalues[name]))
        out[name] = running
    return out


def detectable_difference(se: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest true difference a two-sided test at ``alpha`` finds with probability ``power``
    given this standard error: (z_{1-alpha/2} + z_power) * se (2.80 * se at 0.05 and 80%)."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf
    return (z(1 - alpha / 2) + z(power)) * se
