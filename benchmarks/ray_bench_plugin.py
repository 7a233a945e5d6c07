"""A CPU-bound scorer for the Ray benchmark, loaded as a plugin file (``EVALYARD_EXTRA_PLUGINS``).

``cpu_burn`` hashes the candidate ``rounds`` times (sha256, pure CPU, holds the GIL for its
Python loop) and scores the last digest's first 32 bits as a number in [0, 1): the same
case always gets the same value, wherever it runs, so runs on different executors compare
value by value. A plugin file is shipped to Ray workers by path: every node of the cluster
needs the same file at the same path (on one machine it is).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from evalyard import Case, Score, Scorer, hookimpl


class CpuBurn(Scorer):
    name = "cpu_burn"
    description = "benchmark: sha256 of the candidate, `rounds` times; value from the last digest"
    batch_size = 64

    @dataclass
    class Config:
        rounds: int = 3000

    def score(self, case: Case) -> Score:
        digest = (case.candidate or "").encode()
        for _ in range(self.config.rounds):
            digest = hashlib.sha256(digest).digest()
        return Score(value=int.from_bytes(digest[:4], "big") / 2**32)


class CpuBurnSingle(CpuBurn):
    """The same, one case per batch: with ``rounds=0``, what a batch costs beyond its scoring."""

    name = "cpu_burn_single"
    batch_size = 1


@hookimpl
def register_scorers(register):
    register(CpuBurn)
    register(CpuBurnSingle)
