"""The reviewers' agreement figures equal the reference packages' on generated ratings with ties
(raters agreeing on the same verdict, several categories at equal counts) and missing ratings:
Cohen's and Fleiss' kappa against statsmodels 0.15.0, Krippendorff's alpha (nominal and ordinal)
against krippendorff 0.9.0, each run in a venv of its own (``raters_python``)."""

from __future__ import annotations

import numpy as np
import pytest

from evalyard.analysis import raters
from evalyard.analysis.agreement import cohen_kappa
from evalyard.analysis.reviews import MAPPED, ON_SCALE, SCALE
from reference_envs import run_reference

REFERENCE = r"""
import json, sys
import numpy as np
import krippendorff
from statsmodels.stats.inter_rater import cohens_kappa, fleiss_kappa, aggregate_raters

out = []
for data in json.load(sys.stdin):
    codes = np.array([[np.nan if v is None else v for v in row] for row in data["codes"]], dtype=float)
    k = data["categories"]
    pairs = []
    for a in range(len(codes)):
        for b in range(a + 1, len(codes)):
            both = ~np.isnan(codes[a]) & ~np.isnan(codes[b])
            table = np.zeros((k, k))
            np.add.at(table, (codes[a][both].astype(int), codes[b][both].astype(int)), 1)
            pairs.append(float(cohens_kappa(table).kappa))
    complete = codes[:, ~np.isnan(codes).any(axis=0)].T.astype(int)
    counts, _ = aggregate_raters(complete, n_cat=k)
    scale = np.array([[np.nan if v is None else v for v in row] for row in data["scale"]], dtype=float)
    out.append({"cohen": pairs, "fleiss": float(fleiss_kappa(counts, method="fleiss")),
                "nominal": float(krippendorff.alpha(codes, level_of_measurement="nominal", value_domain=list(range(k)))),
                "ordinal": float(krippendorff.alpha(scale, level_of_measurement="ordinal", value_domain=[0, 1, 2]))})
print(json.dumps(out))
"""


def generated(seed: int, raters_count: int, cases: int, missing: float, agree: float):
    """Ratings of ``cases`` by ``raters_count`` raters over the four mapped verdicts: each case has
    a true verdict a rater gives with probability ``agree`` (else one at random), and each rating
    is missing with probability ``missing``."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, len(MAPPED), size=cases)
    codes = np.where(rng.random((raters_count, cases)) < agree, truth, rng.integers(0, len(MAPPED), (raters_count, cases)))
    gaps = rng.random((raters_count, cases)) < missing
    if raters_count > 2:  # the first two always rate, so with more raters every case stays pairable
        gaps[:2] = False
    return [[None if gaps[r, c] else int(codes[r, c]) for c in range(cases)] for r in range(raters_count)]


DATASETS = [(seed, n, cases, missing, agree) for seed, (n, cases, missing, agree) in enumerate(
    [(2, 40, 0.2, 0.5), (2, 25, 0.0, 0.9), (3, 60, 0.15, 0.6), (3, 30, 0.0, 0.3), (4, 80, 0.25, 0.7),
     (5, 50, 0.3, 0.5), (3, 200, 0.1, 0.55), (4, 12, 0.2, 0.95)])]


@pytest.fixture(scope="module")
def reference(raters_python):
    data = []
    for seed, n, cases, missing, agree in DATASETS:
        codes = generated(seed, n, cases, missing, agree)
        scale = [[None if v is None else SCALE.index(ON_SCALE[MAPPED[v]]) for v in row] for row in codes]
        data.append({"codes": codes, "scale": scale, "categories": len(MAPPED)})
    return run_reference(raters_python, REFERENCE, data)


def ratings_of(codes):
    return {f"c{c}": {f"r{r}": MAPPED[row[c]] for r, row in enumerate(codes) if row[c] is not None}
            for c in range(len(codes[0]))}


@pytest.mark.parametrize("which", range(len(DATASETS)))
def test_agreement_equals_statsmodels_and_krippendorff(reference, which):
    seed, n, cases, missing, agree = DATASETS[which]
    codes = generated(seed, n, cases, missing, agree)
    expected = reference[which]
    found = raters.rater_agreement(ratings_of(codes), MAPPED, ordered=SCALE, ordinal_of=ON_SCALE)
    kappas = [pair["kappa"] for pair in found["cohen"]]
    assert kappas == pytest.approx(expected["cohen"], abs=1e-12)
    # the one Cohen's kappa of evalyard, the scorer-against-labels one, is what each pair uses
    first = [(a, b) for a, b in zip(codes[0], codes[1]) if a is not None and b is not None]
    assert cohen_kappa([a for a, _ in first], [b for _, b in first]) == pytest.approx(expected["cohen"][0], abs=1e-12)
    assert found["fleiss"]["kappa"] == pytest.approx(expected["fleiss"], abs=1e-12)
    assert found["alpha_nominal"]["alpha"] == pytest.approx(expected["nominal"], abs=1e-12)
    assert found["alpha_ordinal"]["alpha"] == pytest.approx(expected["ordinal"], abs=1e-12)
