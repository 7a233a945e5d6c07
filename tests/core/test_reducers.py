"""Epoch reducers: pure functions, and their parity with the real inspect_ai package."""

from __future__ import annotations

import math
import re

import pytest

from evalyard.analysis.reducers import Reducer, Trial, parse_reducer, stability
from evalyard.errors import InputError


def trials(*raws):
    out = []
    for raw in raws:
        if raw is None:
            out.append(Trial(error="provider down"))
        elif isinstance(raw, str):
            out.append(Trial(label=raw))
        else:
            out.append(Trial(value=float(raw)))
    return out


@pytest.mark.parametrize("spec, raws, value, label", [
    ("mean", (1, 0, 1, 1), 0.75, None),
    ("median", (0.2, 0.9, 0.4), 0.4, None),
    ("mode", (0, 1, 1, 0), 0.0, None),           # a tie: the earliest of the most frequent
    ("mode", ("no", "yes", "yes"), None, "yes"),
    ("max", (0.1, 0.7, 0.3), 0.7, None),
    ("min", (0.1, 0.7, None), 0.1, None),        # a failed trial is left out
    ("pass_at_k:k=1", (1, 0, 0, 0), 0.25, None),
    ("pass_at_k:k=2", (1, 0, 0, 0), 0.5, None),
    ("at_least_k:k=2", (1, 0, 1), 1.0, None),
    ("at_least_k:k=2,value=0.5", (0.6, 0.4, 0.2), 0.0, None),
    ("mean", ("C", "I", "P", "yes"), 0.625, None),
])
def test_reducers_give_their_definitions(spec, raws, value, label):
    reduced = parse_reducer(spec)(trials(*raws))
    assert reduced.error is None
    assert reduced.label == label
    assert (reduced.value is None and value is None) or math.isclose(reduced.value, value)


def test_every_trial_failed_is_an_error_not_a_zero():
    reduced = parse_reducer("mean")(trials(None, None))
    assert reduced.value is None and "every epoch failed (2): provider down" in reduced.error


def test_pass_at_k_with_fewer_scored_trials_than_k_is_an_error():
    reduced = parse_reducer("pass_at_k:k=3")(trials(1, None, 0))
    assert reduced.value is None and "only 2 of 3 epochs were scored" in reduced.error


@pytest.mark.parametrize("text, message", [
    ("avg", "unknown reducer 'avg'"),
    ("pass_at_k", "needs k"),
    ("pass_at_k:k=0", "at least 1"),
    ("mean:k=2", "has no parameter 'k=2' (it takes none)"),
    ("at_least_k:k=two", "whole number"),
])
def test_bad_reducers_are_one_line_errors(text, message):
    with pytest.raises(InputError, match=re.escape(message)):
        parse_reducer(text, "suite.yaml:4")


def test_k_larger_than_the_epochs_is_refused_before_the_run():
    with pytest.raises(InputError, match="needs at least 5 epochs, the run has 3"):
        parse_reducer("pass_at_k:k=5").check_epochs(3, "--reducer")
    Reducer("pass_at_k", 3).check_epochs(3, "--reducer")


def test_stability_counts_cases_whose_verdict_moves_and_the_pooled_sd():
    figures = stability([
        [Trial(1.0, passed=True), Trial(1.0, passed=True)],
        [Trial(1.0, passed=True), Trial(0.0, passed=False)],
        [Trial(0.0, passed=False)],                       # one trial: not compared
    ])
    assert figures["cases"] == 2 and figures["unstable"] == 1 and figures["unstable_share"] == 0.5
    assert math.isclose(figures["within_case_sd"], math.sqrt((0 + 0.5) / 2))


#: Per-epoch scores covering the edge cases: ties in mode, k larger than the epochs, non-numeric
#: labels (C/I/P/N, yes/no, numbers as text, words), failed epochs (inspect's NaN), one epoch.
CASES = [
    [1, 0, 1, 1, 0], [0, 0, 0], [1, 1, 1], [0.2, 0.9, 0.4, 0.9], [0.5, 0.25],
    [1, 0, 1, 0], ["C", "I", "C"], ["I", "C"], ["P", "P", "C", "I"], ["yes", "no", "no"],
    ["N", "C"], ["0.7", "0.2", "1"], ["maybe", "yes"], [1, None, 0], [None, None, 1],
    [0.3], [None, 1, 1], [0.8, 0.8, 0.6, 0.6, 1.0], ["b", "a", "a", "b"], [2.5, -1, 3],
]
SPECS = ["mean", "median", "mode", "max", "pass_at_k:k=1", "pass_at_k:k=2", "pass_at_k:k=3",
         "pass_at_k:k=2,value=0.5", "at_least_k:k=1", "at_least_k:k=2", "at_least_k:k=3,value=0.5"]

INSPECT = r"""
import json, math, sys
from inspect_ai.scorer import Score
from inspect_ai.scorer._reducer.reducer import at_least, max_score, mean_score, median_score, mode_score, pass_at

data = json.load(sys.stdin)
def make(spec):
    name, _, rest = spec.partition(":")
    params = dict(p.split("=") for p in rest.split(",") if p)
    value = float(params.get("value", 1.0))
    return {"mean": mean_score, "median": median_score, "mode": mode_score, "max": max_score}[name]() \
        if name in ("mean", "median", "mode", "max") else \
        (pass_at if name == "pass_at_k" else at_least)(int(params["k"]), value)
out = []
for spec in data["specs"]:
    reducer = make(spec)
    for raws in data["cases"]:
        value = reducer([Score(value=float("nan") if r is None else r) for r in raws]).value
        out.append(None if isinstance(value, float) and math.isnan(value) else value)
print(json.dumps(out))
"""


def test_reducers_equal_inspect_ai_on_the_same_epochs(inspect_python):
    from reference_envs import run_reference

    from evalyard.analysis.reducers import to_float

    theirs = run_reference(inspect_python, INSPECT, {"specs": SPECS, "cases": CASES})
    ours = [parse_reducer(spec)(trials(*raws)) for spec in SPECS for raws in CASES]
    assert len(theirs) == len(ours) == len(SPECS) * len(CASES)
    compared = 0
    for (spec, raws), reference, reduced in zip([(s, c) for s in SPECS for c in CASES], theirs, ours):
        where = f"{spec} on {raws}"
        if reference is None:  # inspect's NaN: unscored
            assert reduced.error is not None, where
        elif isinstance(reference, str):
            assert reduced.error is None and reduced.label == reference, where
        else:
            assert reduced.error is None, where
            got = reduced.value if reduced.value is not None else to_float(reduced.label)
            assert got == float(reference), where  # exactly: same formulas, same order of operations
        compared += 1
    assert compared == 220
