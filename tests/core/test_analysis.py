"""The analysis package on plain values, with no database and no application: what the store's
queries feed it is rows, and these are rows written by hand."""

from __future__ import annotations

import statistics

import pytest

from evalyard.analysis import comparison, labels, stats


def test_the_mean_interval_is_the_one_bootstrap_of_the_mean():
    values = [0.1, 0.5, 0.9, 0.3, 0.7, 0.2, 0.8, 0.45]
    generic = stats.bootstrap(lambda rows: sum(values[i] for i in rows) / len(rows), len(values))
    assert generic == pytest.approx(list(stats.bootstrap_ci(values)), abs=1e-12)


def test_bootstrap_leaves_out_undefined_resamples_and_gives_up_when_most_are():
    values = [1.0, 2.0, 3.0, 4.0]
    some_undefined = stats.bootstrap(lambda rows: None if rows[0] == 0 else 1.0, len(values))
    assert some_undefined == [1.0, 1.0]
    assert stats.bootstrap(lambda rows: None, len(values)) is None
    assert stats.bootstrap(lambda rows: 1.0, 1) is None


def test_paired_figures_from_hand_written_pairs():
    pairs = [("a", 0.0, 1.0), ("b", 1.0, 1.0), ("c", 1.0, 0.0), ("d", 0.0, 1.0)]
    entry = comparison.paired(iter(pairs), higher=True, top=1)
    assert (entry["paired_cases"], entry["wins"], entry["losses"], entry["ties"]) == (4, 2, 1, 1)
    assert entry["mean_delta"] == pytest.approx(statistics.mean([1, 0, -1, 1]))
    assert entry["ci95"][0] < entry["mean_delta"] < entry["ci95"][1]
    assert entry["worst_cases"] == [{"case_id": "c", "base": 1.0, "new": 0.0, "delta": -1.0}]
    aggregate, change = comparison.scorer_changes(
        "s", {"fingerprint": "x", "fingerprint_data": {"version": 1}}, {"fingerprint": "y", "fingerprint_data": {"version": 2}},
        {"aggregate": {"f1": 0.5}}, {"aggregate": {"f1": 0.75}})
    assert aggregate == {"f1": {"base": 0.5, "new": 0.75, "delta": 0.25}}
    assert change["differs_in"] == ["version"]


def test_labels_round_robin_and_disagreements():
    picks = labels.round_robin([("bin 1/2", ["a", "b", "c"]), ("bin 2/2", ["d"])], 3)
    assert [(p.case_id, p.why) for p in picks] == [("a", "bin 1/2"), ("d", "bin 2/2"), ("b", "bin 1/2")]
    found = {"x": {"label": "yes"}, "y": {"label": "no"}, "z": {"label": "no"}}
    verdicts = {"x": (0.2, None, None), "y": (0.9, None, None)}  # z: no result
    wrong = labels.disagreements(found, verdicts, {"name": "j", "threshold": 0.5})
    assert [p.case_id for p in wrong] == ["x", "y"]
