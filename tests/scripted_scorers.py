"""A deterministic test plugin: scorers whose behaviour each case scripts.

``case.metadata["script"]`` says what happens: a number is the value, "raise"
raises, "nan" returns NaN, "none" returns a Score with neither value nor label, "print"
writes notices to stdout (Python's and file descriptor 1, now and at exit, as Ray does when a
node dies) and scores 1.
Loaded in-process by fixtures, or in subprocesses through
``EVALYARD_EXTRA_PLUGINS=scripted_scorers``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from evalyard import Case, Generation, Generator, Score, Scorer, hookimpl


def _play(case: Case) -> Score:
    script = case.metadata.get("script", 1.0)
    if script == "raise":
        raise ValueError(f"scripted failure on {case.id}")
    if script == "nan":
        return Score(value=float("nan"))
    if script == "none":
        return Score()
    if script == "print":
        import atexit
        import os

        print(f"a library's notice while scoring {case.id}")
        os.write(1, b"a notice written to file descriptor 1\n")
        atexit.register(os.write, 1, b"a notice at exit\n")
        return Score(value=1.0)
    # metadata.verdict, when given, is the scorer's own pass/fail (as scorers with built-in labels do)
    return Score(value=float(script), label="high" if float(script) >= 0.5 else "low",
                 passed=case.metadata.get("verdict"))


class Scripted(Scorer):
    name = "scripted"
    description = "test double: the case's metadata.script decides the score"
    requires = ("candidate",)
    threshold = 0.5
    batch_size = 4

    @dataclass
    class Config:
        delay: float = 0.0

    def score(self, case: Case) -> Score:
        if self.config.delay:
            time.sleep(self.config.delay)
        return _play(case)


class ScriptedAsync(Scorer):
    name = "scripted_async"
    executor = "async"
    batch_size = 8

    async def ascore(self, case: Case) -> Score:
        await asyncio.sleep(0)
        return _play(case)


class ScriptedProcess(Scorer):
    name = "scripted_process"
    executor = "process"
    batch_size = 4

    def score(self, case: Case) -> Score:
        import os

        score = _play(case)
        score.details["pid"] = os.getpid()
        return score


class NeedsReference(Scorer):
    name = "needs_reference"
    requires = ("reference", "candidate")

    def score(self, case: Case) -> Score:
        return Score(value=float(case.reference == case.candidate))


class InFlight(Scorer):
    """Counts its own requests in flight (``ascore`` calls), to check the runner's request limit."""

    name = "in_flight"
    executor = "async"
    batch_size = 64
    now = peak = 0  # class-level: one run's scorer instance and the test read the same numbers

    async def ascore(self, case: Case) -> Score:
        cls = type(self)
        cls.now += 1
        cls.peak = max(cls.peak, cls.now)
        try:
            await asyncio.sleep(0.001)
        finally:
            cls.now -= 1
        return Score(value=1.0)


class CandidateValue(Scorer):
    """The candidate is the script: a number is the value, "raise" raises."""

    name = "candidate_value"
    requires = ("candidate",)
    threshold = 0.5

    def score(self, case: Case) -> Score:
        if case.candidate == "raise":
            raise ValueError(f"scripted failure on {case.id} epoch {case.epoch}")
        return Score(value=float(case.candidate))


class MessageCount(Scorer):
    """Reads the conversation: its value is the number of messages."""

    name = "message_count"
    requires = ("messages",)

    def score(self, case: Case) -> Score:
        return Score(value=float(len(case.messages)))


class ReferenceWords(Scorer):
    """Reads the reference alone: its value is the reference's word count."""

    name = "reference_words"
    requires = ("reference",)

    def score(self, case: Case) -> Score:
        return Score(value=float(len(case.reference.split())))


class PassRate(Scorer):
    """A scorer with a corpus-level metric: the micro pass rate over all scored cases."""

    name = "pass_rate"
    threshold = 0.5

    def score(self, case: Case) -> Score:
        return _play(case)

    def aggregate(self, scores: list[Score]) -> dict[str, float]:
        scored = [s for s in scores if s.error is None]
        if not scored:
            raise ValueError("nothing scored")
        return {"micro_pass": sum(bool(s.passed) for s in scored) / len(scored), "scored": len(scored)}


class Echo(Generator):
    """A deterministic generator: the candidate is the input upper-cased; "fail" in the input fails."""

    name = "echo"

    @dataclass
    class Config:
        suffix: str = ""
        delay: float = 0.0

    async def agenerate(self, case: Case) -> Generation:
        if self.config.delay:
            await asyncio.sleep(self.config.delay)
        if "fail" in case.input:
            raise RuntimeError(f"cannot generate for {case.id}")
        return Generation(text=case.input.upper() + self.config.suffix, details={"model": "echo-1"},
                          usage={"tokens_out": len(case.input.split())})


class PerEpoch(Generator):
    """A generator scripted per trial: ``metadata.answers[epoch]`` is the answer, "fail" fails."""

    name = "per_epoch"

    async def agenerate(self, case: Case) -> Generation:
        answer = case.metadata["answers"][case.epoch or 0]
        if answer == "fail":
            raise RuntimeError(f"cannot generate for {case.id} epoch {case.epoch}")
        return Generation(text=answer)


@hookimpl
def register_scorers(register):
    for cls in (Scripted, ScriptedAsync, ScriptedProcess, NeedsReference, InFlight, PassRate, CandidateValue,
                MessageCount, ReferenceWords):
        register(cls)


@hookimpl
def register_generators(register):
    register(Echo)
    register(PerEpoch)
