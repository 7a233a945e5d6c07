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


@pytest.mark.parametrize("text, message", [
    ("at_least_k:k=2,k=3", "k is given twice"),
    ("pass_at_k:k=2,value=0.5,value=0.7", "value is given twice"),
    ("at_least_k:k=1,value=nan", "value must be a finite number, not 'nan'"),
    ("at_least_k:k=1,value=inf", "value must be a finite number, not 'inf'"),
    ("pass_at_k:k=1,value=-inf", "value must be a finite number, not '-inf'"),
    ("", "expected a reducer name"),
    ("  ", "expected a reducer name"),
])
def test_repeated_non_finite_and_empty_reducers_are_refused(text, message):
    with pytest.raises(InputError, match=re.escape(message)):
        parse_reducer(text)


@pytest.mark.parametrize("text", ["at_least_k:k=2,value=0.99999999", "pass_at_k:k=1,value=0.1234567",
                                  "at_least_k:k=2,value=1e-9", "mean"])
def test_the_spec_and_value_are_exactly_as_written(text):
    reducer = parse_reducer(text)
    assert reducer.spec == text and parse_reducer(reducer.spec) == reducer
    if "value=" in text:
        assert reducer.value == float(text.rpartition("value=")[2])
    # a trial just under 1 but at the value the user wrote counts as reaching it
    assert parse_reducer("at_least_k:k=1,value=0.99999999")([Trial(0.999999995)]).value == 1.0


@pytest.mark.parametrize("spec", ["mean", "median"])
def test_a_reduction_that_is_not_a_number_is_an_error_of_the_case(spec):
    reduced = parse_reducer(spec)(trials(math.inf, -math.inf))
    assert reduced.value is None and reduced.label is None
    assert reduced.error == f"{spec} of the epochs is not a number (NaN) from inf, -inf"


def test_dict_values_are_reduced_key_by_key():
    epochs = [Trial({"accuracy": 1, "honesty": "C"}), Trial({"accuracy": 0, "honesty": "I"}),
              Trial({"accuracy": 1, "honesty": None}), Trial(error="provider down")]
    assert parse_reducer("mean")(epochs).value == {"accuracy": 2 / 3, "honesty": 0.5}
    assert parse_reducer("mode")(epochs).value == {"accuracy": 1.0, "honesty": "C"}
    assert parse_reducer("max")(epochs).value == {"accuracy": 1.0, "honesty": "C"}
    assert parse_reducer("at_least_k:k=2")(epochs).value == {"accuracy": 1.0, "honesty": 0.0}
    mixed = parse_reducer("mean")([Trial({"a": 1}), Trial(0.5)])
    assert mixed.value is None and "mix dicts and plain values" in mixed.error
    keys = parse_reducer("mean")([Trial({"a": 1}), Trial({"b": 1})])
    assert keys.value is None and "different keys: ['a'] vs ['b']" in keys.error
    unscored = parse_reducer("mean")([Trial({"a": 1, "b": None}), Trial({"a": 0, "b": None})])
    assert unscored.value is None and "no epoch scored key 'b'" in unscored.error
    nan = parse_reducer("mean")([Trial({"a": math.inf}), Trial({"a": -math.inf})])
    assert nan.value is None and "not a number" in nan.error


#: Dict-valued epochs (inspect_ai's dict scores; None is an epoch that key was not scored, NaN in
#: inspect): every key reduced alone, the same keys in every epoch.
DICT_CASES = [
    [{"a": 1, "b": 0}, {"a": 0, "b": 0}, {"a": 1, "b": 1}],
    [{"a": "C", "b": "I"}, {"a": "I", "b": "C"}, {"a": "C", "b": "P"}, {"a": "P", "b": "P"}],
    [{"x": 0.2, "y": "yes"}, {"x": 0.9, "y": "no"}, {"x": 0.4, "y": "no"}, {"x": 0.9, "y": "yes"}],
    [{"a": 1, "b": None}, {"a": None, "b": 0.5}, {"a": 0, "b": 1}],
    [{"a": 1, "b": 1}, None, {"a": 0, "b": 1}, {"a": 1, "b": 0}],
    [{"s": 2.5, "t": "0.7"}, {"s": -1, "t": "1"}, {"s": 3, "t": "0.2"}],
]

INSPECT_DICTS = INSPECT.replace(
    "value = reducer([Score(value=float(\"nan\") if r is None else r) for r in raws]).value",
    "value = reducer([Score(value=float(\"nan\") if r is None else "
    "{k: float(\"nan\") if v is None else v for k, v in r.items()}) for r in raws]).value\n"
    "        value = {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in value.items()} "
    "if isinstance(value, dict) else value")


def test_dict_values_reduce_as_inspect_ai_reduces_them(inspect_python):
    from reference_envs import run_reference

    from evalyard.analysis.reducers import to_float

    assert INSPECT_DICTS != INSPECT
    theirs = run_reference(inspect_python, INSPECT_DICTS, {"specs": SPECS, "cases": DICT_CASES})
    ours = [parse_reducer(spec)([Trial(error="unscored") if r is None else Trial(r) for r in raws])
            for spec in SPECS for raws in DICT_CASES]
    assert len(theirs) == len(ours) == len(SPECS) * len(DICT_CASES)
    unreduced = 0
    for (spec, raws), reference, reduced in zip([(s, c) for s in SPECS for c in DICT_CASES], theirs, ours):
        where = f"{spec} on {raws}"
        assert isinstance(reference, dict), where
        if any(v is None for v in reference.values()):  # a key inspect could not reduce (NaN): an error here
            assert reduced.error is not None and reduced.value is None, where
            unreduced += 1
            continue
        assert reduced.error is None and set(reduced.value) == set(reference), where
        for key, expected in reference.items():
            got = reduced.value[key]
            if isinstance(expected, str):
                assert got == expected, where
            else:
                assert to_float(got) == float(expected), where  # exactly: same formulas and order
    assert unreduced == 1  # pass_at_k:k=3 on the case with a trial unscored: the rest compared
