"""The unbiased pass@k estimator (Chen et al., 2021, "Evaluating Large Language Models Trained on Code").

With n samples of which c pass, the probability that at least one of k samples
drawn without replacement passes is ``1 - C(n-c, k) / C(n, k)``. Computed as a
running product so large n never builds huge binomials.
"""

from __future__ import annotations


def pass_at_k(n: int, c: int, k: int) -> float:
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got n={n}, k={k}")
    if n - c < k:  # every draw of k samples contains a passing one
        return 1.0
    # C(n-c, k) / C(n, k) = prod_{i=n-c+1}^{n} (1 - k / i)
    fail_all = 1.0
    for i in range(n - c + 1, n + 1):
        fail_all *= 1.0 - k / i
    return 1.0 - fail_all
