"""The compiler: what it answers, how it is confined, and that runs survive its death."""

from __future__ import annotations

import os
import signal
import threading
import time
from binascii import a2b_base64

from sandbox_helpers import code_case

from evalyard_sandbox.compiler import compile_request, unpack
from evalyard_sandbox.scorer import PythonUnitTesting
from evalyard_sandbox.worker import direct_outcome

ADD = "def add(a, b):\n    return a + b\n"
TESTS = "assert add(1, 2) == 3\n"


def _job(code: str, tests: str = TESTS, **extra) -> dict:
    return {"code": code, "tests": tests, "policy": "restricted", "strict_results": True, **extra}


def test_a_reply_carries_tests_and_candidate_compiled():
    cache: dict = {}
    reply = compile_request({"id": "7", "job": _job(ADD), "compile_candidate": True}, cache)
    assert reply["id"] == "7" and reply["status"] == "ok"
    tests, code = unpack(a2b_base64(reply["payload"]), TESTS)
    assert tests.assert_statements == 1 and not tests.calls_check
    assert code.co_filename == "<candidate>"
    # the tests are compiled once per distinct source
    again = compile_request({"id": "8", "job": _job(ADD.replace("+", "*")), "compile_candidate": True}, cache)
    assert len(cache) == 1 and unpack(a2b_base64(again["payload"]), TESTS)[1] is not code


def test_a_large_candidate_is_left_to_its_child():
    reply = compile_request({"id": "1", "job": _job(ADD), "compile_candidate": False}, {})
    tests, code = unpack(a2b_base64(reply["payload"]), TESTS)
    assert code is None and tests.assert_statements == 1


def test_compile_failures_are_verdicts_not_payloads():
    refused = compile_request({"id": "1", "job": _job("x = a.__class__\n"), "compile_candidate": True}, {})
    assert refused["status"] == "verdict" and "payload" not in refused
    assert refused["outcome"]["status"] == "error" and refused["outcome"]["phase"] == "compile"
    broken = compile_request({"id": "2", "job": _job("def f(:\n"), "compile_candidate": True}, {})
    assert broken["status"] == "verdict" and broken["outcome"]["message"].startswith("SyntaxError")
    bad_tests = compile_request({"id": "3", "job": _job(ADD, tests="assert ("), "compile_candidate": True}, {})
    assert bad_tests["status"] == "test_error" and "does not compile" in bad_tests["outcome"]["message"]


def test_a_compiler_reply_can_never_make_a_pass():
    for kind in ("verdict", "test_error"):
        for status in ("pass", "fail", "timeout", "sandbox_error", None):
            assert direct_outcome(kind, {"status": status, "message": "x"})["status"] == "sandbox_error"
    assert direct_outcome("nonsense", {"status": "error"})["status"] == "sandbox_error"
    error = direct_outcome("verdict", {"status": "error", "phase": "compile", "message": "SyntaxError"})
    assert error["status"] == "error" and error["cpu_s"] == 0.0 and error["output"] == ""
    assert direct_outcome("test_error", {"status": "test_error", "message": "m"}) == {"status": "test_error", "message": "m"}


def _status(pid: int) -> dict[str, str]:
    return dict(line.split(":\t", 1) for line in open(f"/proc/{pid}/status").read().splitlines() if ":\t" in line)


def test_the_compiler_is_confined():
    scorer = PythonUnitTesting(workers=2)
    try:
        assert scorer.score_batch([code_case(ADD, TESTS)])[0].label == "pass"
        client = scorer._client
        pid = client.compiler_pid
        assert pid and pid != client._process.pid
        status = _status(pid)
        assert status["NoNewPrivs"].strip() == "1"
        limits = open(f"/proc/{pid}/limits").read()
        assert [line.split()[2] for line in limits.splitlines() if line.startswith("Max processes")] == ["0"]
        assert [line.split()[3] for line in limits.splitlines() if line.startswith("Max file size")] == ["0"]
        base = client.isolation.get("run_uid_base")
        if base is not None:  # root: a uid of its own, after the two run slots'
            assert status["Uid"].split()[:3] == [str(base + 2)] * 3
        else:
            assert status["CapEff"].strip() == "0000000000000000"
    finally:
        scorer.close()


def test_runs_survive_the_compiler_dying_with_work_in_flight():
    scorer = PythonUnitTesting(workers=2)
    try:
        assert scorer.score_batch([code_case(ADD, TESTS)])[0].label == "pass"
        pid = scorer._client.compiler_pid
        # Freeze the compiler so requests pile up in flight, then kill it: the worker must notice,
        # hand the oldest request to its run's child and send the rest to a new compiler.
        os.kill(pid, signal.SIGSTOP)
        threading.Timer(0.3, os.kill, (pid, signal.SIGKILL)).start()
        cases = [code_case(ADD, TESTS, f"ok{i}") for i in range(6)]
        cases += [code_case(ADD.replace("+", "-"), TESTS, "wrong"), code_case("def add(a, b)\n", TESTS, "syntax")]
        scores = scorer.score_batch(cases)
        assert [s.label for s in scores] == ["pass"] * 6 + ["fail", "error"]
        assert all(s.error is None for s in scores)
        assert scores[-1].details["phase"] == "compile"
        assert scorer.score_batch([code_case(ADD, TESTS)])[0].label == "pass"  # the new compiler serves
        notes = [line for line in scorer._client._stderr_tail if "the compiler stopped" in line]
        assert len(notes) == 1 and "with 8 request(s) in flight" in notes[0], list(scorer._client._stderr_tail)
    finally:
        scorer.close()


def _jobs(scorer: PythonUnitTesting) -> tuple[list[dict], list[str]]:
    """Jobs for the client, and the verdict each must get."""
    cases = [(ADD, "pass")] * 4 + [(ADD.replace("+", "-"), "fail"), ("def add(a, b)\n", "error")]
    return [scorer._job(code, TESTS, None) for code, _ in cases], [label for _, label in cases]


def test_a_stuck_compiler_is_killed_and_its_work_redone():
    from evalyard_sandbox.client import SandboxClient

    scorer = PythonUnitTesting()  # only builds jobs; its own worker is not used
    scorer.close()
    client = SandboxClient(slots=2, compile_timeout_s=0.5)
    try:
        client.start()
        client.run_many(_jobs(scorer)[0][:1])  # started, with its compiler
        os.kill(client.compiler_pid, signal.SIGSTOP)  # stuck: it will never answer
        jobs, expected = _jobs(scorer)
        started = time.monotonic()
        results = client.run_many(jobs)
        assert [r["status"] for r in results] == expected
        assert time.monotonic() - started < 10  # the watchdog, not the client's own budget
        assert any("the compiler stopped" in line for line in client._stderr_tail)
    finally:
        client.close()


def test_without_a_compiler_runs_compile_in_their_own_processes():
    from evalyard_sandbox.client import SandboxClient

    scorer = PythonUnitTesting()
    scorer.close()
    client = SandboxClient(slots=2, max_compiler_deaths=0)
    try:
        jobs, expected = _jobs(scorer)
        results = client.run_many(jobs)
        assert client.compiler_pid is None
        assert [r["status"] for r in results] == expected
        assert results[-1]["phase"] == "compile" and results[-1]["message"].startswith("SyntaxError")
    finally:
        client.close()
