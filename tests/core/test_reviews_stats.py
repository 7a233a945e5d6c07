"""The statistics of side-by-side reviews: verdicts mapped back to BASE/NEW, the win rate with ties
and both-bad counted half and its interval clustered by case, position bias against 50%, the
reviewers' agreement, and the Bradley-Terry ranking. Known values from the papers that define them."""

from __future__ import annotations

import math

import pytest

from evalyard.analysis import raters, ranking, reviews, stats
from evalyard.analysis.reviews import Review


def review(case, reviewer, new_side, verdict, systems=("base", "new")):
    base, new = systems
    left, right = (new, base) if new_side == "left" else (base, new)
    return Review(case, reviewer, left, right, verdict)


def test_a_verdict_is_mapped_back_through_the_side_each_run_was_shown_on():
    assert reviews.mapped(review("c", "ann", "left", "A")) == "new"
    assert reviews.mapped(review("c", "ann", "right", "A")) == "base"
    assert reviews.mapped(review("c", "ann", "right", "B")) == "new"
    assert reviews.mapped(review("c", "ann", "left", "both_bad")) == "both_bad"
    assert [reviews.score(review("c", "a", "right", v), "new") for v in reviews.VERDICTS] == [0.0, 1.0, 0.5, 0.5]


def test_a_bad_verdict_or_the_same_system_on_both_sides_is_refused():
    with pytest.raises(ValueError, match="verdict 'C'"):
        Review("c", "ann", "base", "new", "C")
    with pytest.raises(ValueError, match="same system"):
        Review("c", "ann", "new", "new", "A")


def test_win_rate_counts_ties_and_both_bad_half():
    found = reviews.win_rate([review("c1", "a", "left", "A"), review("c2", "a", "right", "A"),
                              review("c3", "a", "left", "tie"), review("c4", "a", "right", "both_bad")])
    assert found["win_rate"] == pytest.approx((1 + 0 + 0.5 + 0.5) / 4)
    assert (found["wins"], found["losses"], found["ties"], found["both_bad"]) == (1, 1, 1, 1)
    assert found["ci_method"] == "independent cases"


def test_the_interval_is_clustered_by_case_when_several_reviewers_saw_it():
    # 20 cases, 3 reviewers each, and the reviewers of a case always agree: 20 observations, not 60
    verdicts = [review(f"c{i}", r, "left", "A" if i % 2 else "B") for i in range(20) for r in "xyz"]
    clustered = reviews.win_rate(verdicts)
    assert clustered["ci_method"] == "clustered by case" and clustered["cases"] == 20
    # the same figure as one verdict per case: the extra reviewers bring no information
    once = reviews.win_rate([v for v in verdicts if v.reviewer == "x"])
    assert clustered["win_rate"] == once["win_rate"] == 0.5
    assert clustered["ci95"] == pytest.approx(once["ci95"])
    mean, se, g = stats.clustered_se([(3, 3.0 * (i % 2)) for i in range(20)])
    half = stats.t_quantile(0.95, g - 1) * se
    assert clustered["ci95"] == pytest.approx([mean - half, mean + half])


def test_one_outcome_everywhere_gets_wilsons_interval_not_zero_width():
    found = reviews.win_rate([review(f"c{i}", "a", "left", "A") for i in range(8)])
    assert found["win_rate"] == 1.0 and found["ci_method"] == "wilson"
    assert found["ci95"] == pytest.approx(list(stats.wilson_ci(8, 8)))
    assert reviews.win_rate([])["win_rate"] is None


def test_position_bias_is_the_left_share_of_decisive_verdicts_against_half():
    verdicts = [Review(f"c{i}", "ann", "base", "new", "A" if i < 7 else "B") for i in range(10)]
    verdicts += [Review("t", "ann", "base", "new", "tie"), Review("t", "bob", "new", "base", "both_bad")]
    found = reviews.position_bias(verdicts)
    assert found["ann"]["decisive"] == 10 and found["ann"]["left_share"] == 0.7
    assert found["ann"]["p"] == pytest.approx(0.34375)  # R: binom.test(7, 10)$p.value
    assert found["ann"]["ci95"] == pytest.approx(list(stats.wilson_ci(7, 10)))
    assert found["bob"]["left_share"] is None and found["bob"]["p"] is None


def test_binomial_test_matches_r():
    assert stats.binomial_test(5, 10) == pytest.approx(1.0)
    assert stats.binomial_test(0, 10) == pytest.approx(2 * 0.5 ** 10)
    assert stats.binomial_test(682, 925, 0.75) == pytest.approx(0.3825, abs=1e-4)  # R's binom.test example


def test_fleiss_kappa_of_fleiss_1971s_worked_example():
    # the 10 subjects x 5 categories, 14 raters, of the usual worked example: kappa 0.210
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    assert raters.fleiss_kappa(table) == pytest.approx(0.20993, abs=1e-5)
    assert raters.fleiss_kappa([[2, 0], [2, 0]]) is None  # one category only


def krippendorff_example():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 observers, 12 units, gaps
    rows = {"A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
            "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
            "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
            "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]}
    return {f"u{u}": {o: str(v[u]) for o, v in rows.items() if v[u] is not None} for u in range(12)}


def test_krippendorff_alpha_of_krippendorffs_worked_example():
    ratings = krippendorff_example()
    scale = ["1", "2", "3", "4", "5"]
    assert raters.krippendorff_alpha(ratings, scale) == pytest.approx(0.743, abs=5e-4)
    assert raters.krippendorff_alpha(ratings, scale, "ordinal") == pytest.approx(0.815, abs=5e-4)
    assert raters.krippendorff_alpha({"u": {"a": "1"}}, scale) is None  # nothing pairable


def test_reviewer_agreement_has_every_figure_with_an_interval():
    verdicts = [review(f"c{i}", r, side, v) for i in range(30) for r, side, v in
                (("ann", "left", "A"), ("bob", "right", "B" if i % 5 else "A"), ("cy", "left", "A" if i % 3 else "tie"))]
    found = reviews.reviewer_agreement(verdicts[:-1])  # cy's last case missing
    assert [c["raters"] for c in found["cohen"]] == [["ann", "bob"], ["ann", "cy"], ["bob", "cy"]]
    assert found["cohen"][1]["cases"] == 29
    assert found["fleiss"]["cases"] == 29 and found["alpha_nominal"]["cases"] == 30
    for figure in (found["fleiss"], found["alpha_nominal"], found["alpha_ordinal"]):
        low, high = figure["ci95"]
        assert low <= figure.get("kappa", figure.get("alpha")) <= high


def test_bradley_terry_of_two_systems_is_the_log_odds_with_ties_half():
    battles = [Review("c", "r", "a", "b", "A")] * 30 + [Review("c", "r", "b", "a", "A")] * 10 \
        + [Review("c", "r", "a", "b", "tie")] * 6 + [Review("c", "r", "a", "b", "both_bad")] * 4
    found = ranking.bradley_terry(battles, rounds=200)
    (a, b) = found["systems"]
    assert (a["system"], b["system"]) == ("a", "b")
    assert a["rating"] - b["rating"] == pytest.approx(400 * math.log10(35 / 15))
    assert (a["rating"] + b["rating"]) / 2 == pytest.approx(1000)
    assert a["ci95"][0] < a["rating"] < a["ci95"][1] and (a["rank"], b["rank"]) == (1, 2)


def test_bradley_terry_recovers_known_strengths_and_ranks_by_interval():
    import numpy as np

    rng = np.random.default_rng(7)
    truth = {"s1": 1200.0, "s2": 1100.0, "s3": 1000.0, "s4": 700.0}
    names = list(truth)
    battles = []
    for _ in range(3000):
        i, j = rng.choice(4, size=2, replace=False)
        p = 1 / (1 + 10 ** ((truth[names[j]] - truth[names[i]]) / 400))
        battles.append(Review("c", "r", names[i], names[j], "A" if rng.random() < p else "B"))
    found = ranking.bradley_terry(battles, rounds=200)
    shift = np.mean(list(truth.values())) - 1000
    for row in found["systems"]:
        assert row["ci95"][0] - 30 < truth[row["system"]] - shift < row["ci95"][1] + 30
    assert [r["system"] for r in found["systems"]] == ["s1", "s2", "s3", "s4"]
    assert [r["rank"] for r in found["systems"]] == [1, 2, 3, 4]


def test_bradley_terry_refuses_a_system_that_never_won_or_tied():
    battles = [Review("c", "r", "a", "b", "A"), Review("c", "r", "b", "c", "tie"), Review("c", "r", "c", "b", "B")]
    found = ranking.bradley_terry(battles)
    assert found["systems"] == [] and "no finite ratings" in found["note"]
