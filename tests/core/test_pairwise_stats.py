"""The length-controlled preference fit of ``evalyard compare --judge``, checked against scipy's
optimiser on the same objective (a logistic log-likelihood with Gaussian priors)."""

from __future__ import annotations

import numpy as np
import pytest

from evalyard.analysis.pairwise import PRIOR_PRECISION, fit_preference


def test_the_newton_fit_matches_scipy_on_the_same_objective():
    optimize = pytest.importorskip("scipy.optimize")
    rng = np.random.default_rng(3)
    for _ in range(5):
        n = 60
        length = np.tanh(rng.normal(size=n))
        position = rng.choice([-1.0, 1.0], size=n)
        p = 1 / (1 + np.exp(-(0.4 + 1.5 * length + 0.3 * position)))
        outcome = np.where(rng.random(n) < 0.15, 0.5, (rng.random(n) < p).astype(float))  # some ties
        X = np.column_stack([np.ones(n), length, position])
        prior = np.asarray(PRIOR_PRECISION)

        def loss(beta):
            z = X @ beta
            return -np.sum(outcome * z - np.logaddexp(0, z)) + 0.5 * np.sum(prior * beta ** 2)

        expected = optimize.minimize(loss, np.zeros(3), method="BFGS", options={"gtol": 1e-10}).x
        assert fit_preference(length, position, outcome) == pytest.approx(expected, abs=1e-5)
