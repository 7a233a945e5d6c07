"""A scorer's copy in a worker is set up and closed as the run's own copy is (``evalyard.ScorerRef``).

Through real runs: a scorer from a plugin file whose ``setup`` takes what ``score`` needs from
the run's runtime, on the thread executor (the run's process) and the process executor (spawned
workers, which rebuild the runtime from the run's settings), and a scorer that records every
``setup`` and ``close`` in a file, so each copy a worker built is seen closed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import evalyard
from evalyard import Application, Settings
from testutil import write

PLUGIN = """
import os
from evalyard import Score, Scorer, hookimpl
from dataclasses import dataclass

class Setup(Scorer):
    name = "uses_setup"
    batch_size = 2

    @dataclass
    class Config:
        log: str = ""

    def setup(self, runtime):
        # what score() needs, taken from the run's runtime: a copy never set up has none
        self.judge = runtime.judge_model
        self.prompt_dirs = [str(d) for d in runtime.prompt_dirs]
        self._note("setup")

    def score(self, case):
        return Score(value=float(len(case.candidate)),
                     details={"judge": self.judge, "prompt_dirs": self.prompt_dirs, "pid": os.getpid()})

    def close(self):
        self._note("close")

    def _note(self, what):
        if self.config.log:
            with open(self.config.log, "a") as out:
                out.write(f"{what} {os.getpid()}\\n")

class Counted(Scorer):
    # no setup of its own: each copy notes when it is built and when it is closed
    name = "counted"
    batch_size = 2

    @dataclass
    class Config:
        log: str = ""

    def __init__(self, config=None, **options):
        super().__init__(config, **options)
        if self.config.log:
            with open(self.config.log, "a") as out:
                out.write(f"build {os.getpid()}\\n")

    def score(self, case):
        return Score(value=1.0, details={"pid": os.getpid()})

    def close(self):
        with open(self.config.log, "a") as out:
            out.write(f"close {os.getpid()}\\n")

@hookimpl
def register_scorers(register):
    register(Setup)
    register(Counted)
"""


def notes(path: Path) -> list[tuple[str, int]]:
    return [(what, int(pid)) for what, pid in (line.split() for line in path.read_text().splitlines())]


@pytest.mark.parametrize("executor", ["thread", "process"])
def test_every_copy_of_a_scorer_is_set_up_with_the_runs_runtime_and_closed(tmp_path, isolated_home, executor):
    plugin = write(tmp_path / "setup_scorers.py", PLUGIN)
    prompts = tmp_path / "my-prompts"
    prompts.mkdir()
    log = tmp_path / "log.txt"
    # settings given in Python, not in the environment: a worker must get them from the run
    app = Application(Settings.from_env(extra_plugins=(str(plugin),), prompt_dirs=(str(prompts),)))
    run = evalyard.evaluate([{"id": str(i), "candidate": "x" * i} for i in range(1, 9)],
                            [f"uses_setup:log={log}"], app=app, executor=executor, judge_model="test-judge",
                            concurrency=2)
    summary = run.summary["uses_setup"]
    assert (summary["count"], summary["errors"], summary["mean"]) == (8, 0, 4.5), [r["error"] for r in run.results]
    assert {r["details"]["judge"] for r in run.results} == {"test-judge"}
    assert {tuple(r["details"]["prompt_dirs"]) for r in run.results} == {(str(prompts),)}

    seen = notes(log)
    workers = {r["details"]["pid"] for r in run.results}
    if executor == "process":
        assert os.getpid() not in workers  # scored in worker processes
    setups = [pid for what, pid in seen if what == "setup"]
    closes = [pid for what, pid in seen if what == "close"]
    # every copy that scored was set up and closed once: the run's own (pid of this process) and one per worker
    assert workers <= set(setups)
    assert sorted(setups) == sorted(closes), seen
    assert len(setups) == len(set(setups))


def test_every_copy_a_process_worker_built_is_closed(tmp_path, isolated_home):
    plugin = write(tmp_path / "setup_scorers.py", PLUGIN)
    log = tmp_path / "log.txt"
    app = Application(Settings.from_env(extra_plugins=(str(plugin),)))
    run = evalyard.evaluate([{"id": str(i), "candidate": "x"} for i in range(8)], [f"counted:log={log}"], app=app,
                            executor="process", concurrency=2)
    assert run.summary["counted"]["count"] == 8 and run.summary["counted"]["errors"] == 0
    workers = {r["details"]["pid"] for r in run.results} - {os.getpid()}
    seen = notes(log)
    built = sorted(pid for what, pid in seen if what == "build")
    closed = sorted(pid for what, pid in seen if what == "close")
    assert workers and workers <= set(closed)  # each worker that scored closed its copy
    assert built == closed  # and so did the run's own copy: every copy built was closed, once


def test_a_worker_records_a_failing_batch_and_a_stop_as_the_run_process_does(tmp_path, isolated_home):
    """The exception mapping is the core's one (``evalyard.scorer_ref.outcome``) on every executor."""
    plugin = write(tmp_path / "mapping_scorers.py", """
from evalyard import CostLimitReached, Score, Scorer, StopRun, hookimpl

class Mapping(Scorer):
    name = "mapping"
    batch_size = 1

    def score_batch(self, cases):
        kind = cases[0].candidate
        if kind == "raise":
            raise ValueError("the whole batch broke")
        if kind == "stop":
            raise StopRun("out of budget")
        if kind == "cost":  # a stop that takes more than a message to build: it cannot unpickle as it is
            raise CostLimitReached(1.0, 0.5)
        return [Score(value=1.0)]

@hookimpl
def register_scorers(register):
    register(Mapping)
""")
    results = {}
    for executor in ("thread", "process"):
        app = Application(Settings.from_env(extra_plugins=(str(plugin),)))
        cases = [{"id": "a", "candidate": "ok"}, {"id": "b", "candidate": "raise"}]
        run = evalyard.evaluate(cases, ["mapping"], app=app, executor=executor, concurrency=1)
        results[executor] = {r["case_id"]: (r["value"], r["error"]) for r in run.results}
        stopped = evalyard.evaluate([{"id": "s", "candidate": "stop"}], ["mapping"], app=app, executor=executor)
        assert (stopped.status, stopped.error) == ("failed", "stopped: out of budget")  # a stop, no case error
        assert list(stopped.results) == []
        priced = evalyard.evaluate([{"id": "p", "candidate": "cost"}], ["mapping"], app=app, executor=executor)
        assert (priced.status, priced.error) == ("failed", "stopped: cost limit reached: $1.0000 spent of $0.5000 "
                                                            "allowed")
    assert results["thread"] == results["process"]
    assert results["thread"]["a"] == (1.0, None)
    assert results["thread"]["b"][0] is None and "the whole batch broke" in results["thread"]["b"][1]
