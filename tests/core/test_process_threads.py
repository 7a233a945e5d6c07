"""The process executor runs each worker's torch/BLAS/OpenMP on its share of the CPUs.

Through a real run in a real Python process whose spawned workers import real torch: once
with torch imported by the scorer (after the worker's set-up: the environment variables
size it), once with torch already imported by the main module, which a spawned worker
re-imports before anything else (then the set-up tells torch directly).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from testutil import write

PLUGIN = """
import os
from evalyard import Score, Scorer, hookimpl

class ThreadReport(Scorer):
    name = "thread_report"
    executor = "process"
    batch_size = 2

    def score(self, case):
        import torch

        variables = {name: os.environ.get(name) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
        return Score(value=1.0, details={"torch": torch.get_num_threads(), "variables": variables, "pid": os.getpid()})

@hookimpl
def register_scorers(register):
    register(ThreadReport)
"""

MAIN = """
import json, sys
{torch_import}
import evalyard
from evalyard import Application, Settings

if __name__ == "__main__":
    import torch
    before = torch.get_num_threads()
    app = Application(Settings.from_env(extra_plugins=(sys.argv[1],)))
    run = evalyard.evaluate([{{"id": str(i), "candidate": "x"}} for i in range(8)], ["thread_report"], app=app,
                            concurrency=2)
    print(json.dumps({{"before": before, "after": torch.get_num_threads(), "summary": run.summary["thread_report"],
                      "details": [r["details"] for r in run.results]}}))
"""


@pytest.mark.parametrize("torch_in_main", [False, True], ids=["torch-loaded-by-the-scorer", "torch-loaded-by-main"])
def test_each_worker_runs_torch_on_its_share_of_the_cpus(tmp_path, cli_env, torch_in_main):
    pytest.importorskip("torch", reason="torch comes with evalyard-embedding (pip install -e 'plugins/embedding')")
    plugin = write(tmp_path / "thread_report.py", PLUGIN)
    main = write(tmp_path / "main.py", MAIN.format(torch_import="import torch" if torch_in_main else ""))
    env = {k: v for k, v in cli_env.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    done = subprocess.run([sys.executable, str(main), str(plugin)], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["summary"]["count"] == 8 and report["summary"]["errors"] == 0

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    share = max(1, cpus // 2)  # two workers
    details = report["details"]
    assert {d["pid"] for d in details} - {os.getpid()}  # scored in workers
    assert {d["torch"] for d in details} == {share}
    assert all(d["variables"] == dict.fromkeys(d["variables"], str(share)) for d in details)
    assert report["after"] == report["before"]  # the main process keeps its own threads
