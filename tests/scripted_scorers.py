"""A deterministic test plugin: scorers whose behaviour each case scripts.

``case.metadata["script"]`` says what happens: a number is the value, "raise"
raises, "nan" returns NaN, "none" returns a Score with neither value nor label.
Loaded in-process by fixtures, or in subprocesses through
``EVALYARD_EXTRA_PLUGINS=scripted_scorers``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from evalyard import Case, Score, Scorer, hookimpl


def _play(case: Case) -> Score:
    script = case.metadata.get("script", 1.0)
    if script == "raise":
        raise ValueError(f"scripted failure on {case.id}")
    if script == "nan":
        return Score(value=float("nan"))
    if script == "none":
        return Score()
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


@hookimpl
def register_scorers(register):
    for cls in (Scripted, ScriptedAsync, ScriptedProcess, NeedsReference):
        register(cls)
