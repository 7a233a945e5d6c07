"""Verdicts, labels, details, pass@k over samples, test styles and infrastructure errors."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from sandbox_helpers import code_case

from evalyard import Case

from evalyard_sandbox.passk import pass_at_k
from evalyard_sandbox.scorer import PythonUnitTesting

ADD = "def add(a, b):\n    return a + b\n"
HUMANEVAL_TESTS = "\ndef check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(-1, 1) == 0\n"


def test_the_five_states(sandbox):
    scorer = sandbox(timeout=1.0, memory_mb=128, workers=4)
    cases = [
        code_case(ADD, "assert add(1, 2) == 3", "pass"),
        code_case("def add(a, b):\n    return a - b\n", "assert add(1, 2) == 3", "fail"),
        code_case("def add(a, b):\n    return a + undefined\n", "assert add(1, 2) == 3", "error"),
        code_case("def add(a, b):\n    while True:\n        pass\n", "assert add(1, 2) == 3", "timeout"),
        code_case("def add(a, b):\n    return bytearray(1 << 33)\n", "assert add(1, 2) == 3", "memory"),
    ]
    scores = scorer.score_batch(cases)
    assert [s.label for s in scores] == ["pass", "fail", "error", "timeout", "memory"]
    assert [s.value for s in scores] == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert [s.passed for s in scores] == [True, False, False, False, False]
    assert all(s.error is None for s in scores)
    fail, error = scores[1].details, scores[2].details
    assert fail["message"] == "assertion failed: assert add(1, 2) == 3"
    assert fail["traceback"][-1].startswith("<tests>:1")
    assert error["message"] == "NameError: name 'undefined' is not defined" and error["exception"] == "NameError"
    assert any(line.startswith("<candidate>:2 in add") for line in error["traceback"])
    # Wall clock and CPU limit are both 1 s here: under load either may fire first; both are "timeout".
    assert any(limit in scores[3].details["message"] for limit in ("wall-clock limit of 1 s", "CPU time limit of 1 s"))
    assert scores[3].details["elapsed_s"] < 2.0
    for score in scores:
        assert {"elapsed_s", "cpu_s", "output", "sandbox"} <= set(score.details)
        assert "rlimits" in score.details["sandbox"]["layers"]


def test_humaneval_check_without_a_call_uses_the_entry_point(sandbox):
    scorer = sandbox()
    scores = scorer.score_batch([
        code_case(ADD, HUMANEVAL_TESTS, "implicit", entry_point="add"),
        code_case(ADD, HUMANEVAL_TESTS + "\ncheck(add)\n", "explicit"),
        code_case(ADD, HUMANEVAL_TESTS, "no-entry-point"),
        code_case("def plus(a, b):\n    return a + b\n", HUMANEVAL_TESTS, "missing", entry_point="add"),
    ])
    assert [s.label for s in scores[:2]] == ["pass", "pass"]
    assert scores[0].details["assertions"] == 2
    assert scores[2].error and "no entry_point" in scores[2].error  # the suite's mistake: not a 0
    assert scores[3].label == "error" and "does not define 'add'" in scores[3].details["message"]


def test_suite_level_defaults_for_tests_and_entry_point(sandbox):
    scorer = sandbox(unit_tests=HUMANEVAL_TESTS, entry_point="add")
    scores = scorer.score_batch([Case(id="a", candidate=ADD), Case(id="b", candidate=ADD.replace("+", "*"))])
    assert [s.label for s in scores] == ["pass", "fail"]


def test_unit_tests_as_a_list_of_snippets(sandbox):
    score = sandbox().score_batch([code_case(ADD, None, unit_tests=["assert add(1, 1) == 2", "assert add(2, 2) == 4"])])[0]
    assert score.label == "pass" and score.details["assertions"] == 2


def test_unjudgeable_cases_are_errors_not_zeros(sandbox):
    scorer = sandbox()
    scores = scorer.score_batch([
        code_case(ADD, "assert add(1, 2) ==", "bad-tests"),
        code_case(ADD, None, "no-tests"),
        Case(id="no-code", metadata={"unit_tests": "assert True"}),
        code_case(ADD, "assert add(1, 2) == 3", "fine"),
    ])
    assert [s.value for s in scores] == [None, None, None, 1.0]
    assert "test code does not compile" in scores[0].error
    assert "no unit tests" in scores[1].error
    assert "neither candidate nor metadata.samples" in scores[2].error


def test_candidate_syntax_error_is_an_error_verdict(sandbox):
    score = sandbox().score_batch([code_case("def add(a, b)\n    return a\n", "assert add(1, 2) == 3")])[0]
    assert score.label == "error" and score.value == 0.0 and score.details["message"].startswith("SyntaxError")


@pytest.mark.parametrize("policy", ["os_only", "restricted"])
def test_candidates_that_do_not_compile(sandbox, policy):
    sources = {
        "syntax": "def add(a, b)\n    return a\n",
        "null-byte": "def add(a, b):\n    return a + b\x00\n",
        "nested": "x = " + "(" * 400 + "1" + ")" * 400 + "\n" + ADD,
        "fine": ADD,
        "dunder": "def add(a, b):\n    return a.__class__.__name__ and a + b\n",
    }
    scores = sandbox(policy=policy).score_batch(
        [code_case(code, "assert add(1, 2) == 3", name) for name, code in sources.items()])
    labels = {name: score.label for name, score in zip(sources, scores)}
    assert labels["fine"] == "pass" and labels["syntax"] == "error" and labels["null-byte"] == "error"
    assert labels["nested"] in ("pass", "error")  # the parser's nesting limit, as in plain Python
    syntax = scores[0]
    assert syntax.details["phase"] == "compile" and "expected ':'" in syntax.details["message"]
    assert {"elapsed_s", "cpu_s", "output", "sandbox"} <= set(syntax.details)
    if policy == "restricted":  # valid Python the policy will not run: a refusal, not the candidate's failure
        refused = scores[-1]
        assert refused.label == "refused" and refused.value is None and "__class__" in refused.error
        assert refused.details["phase"] == "compile" and refused.details["policy_refusals"]
    else:
        assert labels["dunder"] == "pass"


def test_refused_packages_the_worker_loaded_cannot_be_imported(sandbox):
    # The worker itself uses ctypes: its cached submodules must not be importable without the event.
    code = "from ctypes._endian import BigEndianStructure\n" + ADD
    score = sandbox(policy="os_only").score_batch([code_case(code, "assert add(1, 2) == 3")])[0]
    assert score.label == "error" and "ImportError" in score.details["message"]
    assert "not permitted" in score.details["message"]


def test_output_is_captured_and_capped(sandbox):
    scorer = sandbox(max_output_bytes=1000)
    code = "print('hello')\nfor i in range(10000):\n    print('x' * 100)\n" + ADD
    score = scorer.score_batch([code_case(code, "assert add(1, 2) == 3")])[0]
    assert score.label == "pass"
    assert score.details["output"].startswith("hello\n") and len(score.details["output"]) == 1000
    assert score.details["output_truncated"] and score.details["output_bytes"] > 1_000_000


def test_pass_at_k_over_samples(sandbox):
    scorer = sandbox(k=[1, 2, 5])
    good, bad = ADD, "def add(a, b):\n    return 0\n"
    samples = [good, bad, good, bad, bad]
    score = scorer.score_batch([Case(id="s", candidate="ignored when samples exist",
                                     metadata={"unit_tests": "assert add(1, 2) == 3", "samples": samples})])[0]
    assert score.details["n"] == 5 and score.details["c"] == 2
    assert score.details["pass_at_k"] == {"1": pytest.approx(0.4), "2": pytest.approx(pass_at_k(5, 2, 2)), "5": 1.0}
    assert score.value == pytest.approx(0.4) and score.label == "fail" and not score.passed
    assert [s["label"] for s in score.details["samples"]] == ["pass", "fail", "pass", "fail", "fail"]
    assert score.details["labels"] == {"pass": 2, "fail": 3}


def test_samples_edge_cases(sandbox):
    loop = "def add(a, b):\n    while True:\n        pass\n"
    scores = sandbox(k=[1, 10], timeout=0.5).score_batch([
        Case(id="all", metadata={"unit_tests": "assert add(1, 2) == 3", "samples": [ADD, ADD]}),
        Case(id="none", metadata={"unit_tests": "assert add(1, 2) == 3", "samples": [loop, loop, ADD.replace("+", "-")]}),
        Case(id="bad", metadata={"unit_tests": "assert True", "samples": "not a list"}),
    ])
    assert scores[0].label == "pass" and scores[0].value == 1.0 and "10" not in scores[0].details["pass_at_k"]
    assert scores[1].label == "timeout" and scores[1].value == 0.0  # the most common failure
    assert scores[2].error and "non-empty list" in scores[2].error
    two = sandbox(k=[5]).score_batch([Case(id="two", metadata={"unit_tests": "assert True", "samples": [ADD, ADD]})])
    assert two[0].error and "needs at least 5 samples" in two[0].error
    one = sandbox().score_batch([Case(id="one", metadata={"unit_tests": "assert True", "samples": [ADD]})])[0]
    assert one.value == 1.0 and one.details["n"] == 1 and one.details["pass_at_k"] == {"1": 1.0}


def test_close_stops_the_worker_and_scoring_restarts_it():
    scorer = PythonUnitTesting(workers=1)
    try:
        assert scorer.score_batch([code_case(ADD, "assert add(1, 2) == 3")])[0].label == "pass"
        process = scorer._client._process
        scorer.close()
        assert process.poll() is not None
        assert scorer.score_batch([code_case(ADD, "assert add(1, 2) == 3")])[0].label == "pass"
    finally:
        scorer.close()


def test_a_dead_worker_gives_errors_and_the_next_batch_runs():
    scorer = PythonUnitTesting(workers=2, timeout=5.0)
    try:
        scorer.score_batch([code_case(ADD, "assert add(1, 2) == 3")])
        worker_pid = scorer._client._process.pid
        slow = code_case("import time\ntime.sleep(3)\n" + ADD, "assert add(1, 2) == 3")
        threading.Timer(0.5, os.kill, (worker_pid, signal.SIGKILL)).start()
        started = time.monotonic()
        scores = scorer.score_batch([slow, slow])
        assert time.monotonic() - started < 3.0
        assert all(s.value is None and "worker exited" in s.error for s in scores)
        assert scorer.score_batch([code_case(ADD, "assert add(1, 2) == 3")])[0].label == "pass"
    finally:
        scorer.close()


def test_isolation_report_names_the_layers(sandbox):
    score = sandbox(policy="os_only", audit_hook=False).score_batch([code_case(ADD, "assert add(1, 2) == 3")])[0]
    layers = score.details["sandbox"]["layers"]
    assert score.details["sandbox"]["policy"] == "os_only"
    assert "restricted-python" not in layers and "audit-hook" not in layers
    assert {"fork-per-sample", "rlimits", "process-group-kill", "empty-workdir", "output-cap"} <= set(layers)


def test_runs_start_in_an_empty_private_directory(sandbox):
    code = "import os, tempfile\nprint(os.listdir('.'), os.getcwd() == tempfile.gettempdir())\n" + ADD
    scores = sandbox(policy="os_only").score_batch([code_case(code, "assert add(1, 2) == 3", str(i)) for i in range(3)])
    assert [s.details["output"] for s in scores] == ["[] True\n"] * 3


@pytest.mark.parametrize("policy", ["restricted", "os_only"])
def test_runs_import_modules_the_worker_did_not_preload(sandbox, policy):
    code = (
        "import hashlib, calendar, difflib, statistics\n"
        "def digest(text):\n"
        "    return hashlib.sha256(text.encode()).hexdigest()[:8]\n"
        "def facts():\n"
        "    return [calendar.isleap(2024), statistics.median([3, 1, 2]),\n"
        "            difflib.SequenceMatcher(None, 'abcd', 'abed').ratio()]\n"
    )
    tests = "assert digest('x') == '2d711642'\nassert facts() == [True, 2, 0.75]"
    score = sandbox(policy=policy).score_batch([code_case(code, tests)])[0]
    assert score.label == "pass", score.details
