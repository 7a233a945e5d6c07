"""A plugin the Ray tests install on chosen nodes only (a dist-info beside it on the nodes'
PYTHONPATH), so that a node without it, or with another version, is a real one.

``node_echo`` scores ``metadata.value`` (``metadata.raise`` raises) and, inside a Ray
actor, names the node it ran on; ``gpu_echo`` does the same but asks for a GPU per worker;
``judged_echo`` also gives the judge model its ``setup`` took from the run's runtime.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from evalyard import Case, Score, Scorer, hookimpl


class NodeEcho(Scorer):
    name = "node_echo"
    batch_size = 5

    @dataclass
    class Config:
        delay: float = 0.0

    def score(self, case: Case) -> Score:
        if self.config.delay:
            time.sleep(self.config.delay)
        if case.metadata.get("raise"):
            raise ValueError(f"scripted failure on {case.id}")
        details = {}
        ray = sys.modules.get("ray")
        if ray is not None and ray.is_initialized():
            details["node"] = ray.get_runtime_context().get_node_id()
        return Score(value=float(case.metadata["value"]), details=details)


class GpuEcho(NodeEcho):
    name = "gpu_echo"

    def resources(self) -> dict[str, float]:
        return {"gpu": 1}


class JudgedEcho(NodeEcho):
    name = "judged_echo"

    def setup(self, runtime) -> None:
        self.judge = runtime.judge_model  # a copy never set up has no judge, and every case fails

    def score(self, case: Case) -> Score:
        score = super().score(case)
        score.details["judge"] = self.judge
        return score


@hookimpl
def register_scorers(register):
    register(NodeEcho)
    register(GpuEcho)
    register(JudgedEcho)
