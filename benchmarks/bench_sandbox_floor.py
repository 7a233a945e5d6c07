"""Where a sandboxed sample's CPU goes, and the floors under it, on this machine.

Usage::

    .venv/bin/python benchmarks/bench_sandbox_floor.py            # print the measurements
    .venv/bin/python benchmarks/bench_sandbox_floor.py --write    # also update RESULTS.md ("## Sandbox floor")

Companion to ``bench_sandbox.py``: that one times whole processes; this one measures the
pieces a fresh-process-per-sample design cannot avoid, each in a fresh interpreter:

1. ``fork cycle``: fork + ``_exit`` + reap of a child from a process that has imported what
   the sandbox worker imports (its modules and preloads), 8 children alive at a time like
   the worker's zygote bursts; CPU of the parent and of the child.
2. ``page faults``: the CPU cost of one copy-on-write fault and of one fresh (zero-filled)
   page in a forked child, from a child that touches N pages (the per-page slope).
3. ``the work itself``: the 164 HumanEval canonical solutions and their tests executed in
   one warm process, no sandbox at all -- the CPU any harness must spend on the problems.
4. ``the sandbox``: the 164 through ``PythonUnitTesting.score_batch``, restricted and
   ``os_only``: each child's CPU as its worker measured it (``details.cpu_s``, wait4), and
   the worker's and the compiler's own CPU per run (from /proc).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from results_file import write_section  # benchmarks/ is on sys.path when run as a script

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable

FORK_CYCLE = textwrap.dedent("""
    import gc, os, sys, time, resource
    sys.path[:0] = sys.argv[1].split(os.pathsep)
    from evalyard_sandbox import worker
    for name in worker.PRELOAD:
        __import__(name)
    gc.freeze()
    parent, alive, rounds = 0.0, [], 400
    start = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(rounds):
        t = time.thread_time()
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        parent += time.thread_time() - t
        alive.append(pid)
        if len(alive) == 8:
            for pid in alive:
                os.waitpid(pid, 0)
            alive = []
    for pid in alive:
        os.waitpid(pid, 0)
    end = resource.getrusage(resource.RUSAGE_CHILDREN)
    child = (end.ru_utime + end.ru_stime - start.ru_utime - start.ru_stime) / rounds
    print(parent / rounds * 1000, child * 1000)
""")

PAGE_FAULTS = textwrap.dedent("""
    import gc, mmap, os, sys, resource
    pages = int(sys.argv[1]); fresh = sys.argv[2] == "fresh"
    parent_memory = bytearray(pages * 4096 + 4096)
    for i in range(0, len(parent_memory), 4096):
        parent_memory[i] = 1
    gc.freeze()
    r, w = os.pipe()
    samples = []
    for _ in range(40):
        pid = os.fork()
        if pid == 0:
            before = resource.getrusage(resource.RUSAGE_SELF)
            if fresh:
                block = mmap.mmap(-1, pages * 4096)
                for i in range(pages):
                    block[i * 4096] = 2
            else:
                for i in range(pages):
                    parent_memory[i * 4096] = 2
            after = resource.getrusage(resource.RUSAGE_SELF)
            used = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            os.write(w, f"{used}\\n".encode())
            os._exit(0)
        os.waitpid(pid, 0)
        samples.append(float(os.read(r, 100)))
    samples.sort()
    print(samples[len(samples) // 2] * 1000)
""")

IN_PROCESS = textwrap.dedent("""
    import json, sys, time
    records = [json.loads(line) for line in open(sys.argv[1])]
    def once():
        for r in records:
            g = {}
            exec(compile(r["candidate"], "<candidate>", "exec"), g)
            exec(compile(r["metadata"]["unit_tests"], "<tests>", "exec"), g)
            g["check"](g[r["metadata"]["entry_point"]])
    once()  # warm
    t = time.process_time(); once(); print((time.process_time() - t) * 1000)
""")

SANDBOX = textwrap.dedent("""
    import json, os, sys
    from evalyard import Case
    from evalyard_sandbox.scorer import PythonUnitTesting
    cases = [Case(id=r["id"], candidate=r["candidate"], metadata=r["metadata"])
             for r in map(json.loads, open(sys.argv[1]))]
    scorer = PythonUnitTesting(policy=sys.argv[2])
    client = scorer._sandbox()
    client._ensure_started()
    def cpu(pid):
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    pids = (client._process.pid, client.compiler_pid)
    before = [cpu(pid) for pid in pids]
    scores = scorer.score_batch(cases)
    worker, compiler = (cpu(pid) - b for pid, b in zip(pids, before))
    scorer.close()
    child = sorted(s.details["cpu_s"] * 1000 for s in scores)
    passed = sum(s.label == "pass" for s in scores)
    print(json.dumps({"passed": passed, "child_sum_ms": sum(child), "child_median_ms": child[len(child) // 2],
                      "worker_per_run_ms": worker / len(cases) * 1000,
                      "compiler_per_run_ms": compiler / len(cases) * 1000}))
""")


def _run(code: str, *args: str, isolated: bool = False) -> str:
    command = [PYTHON, *(["-I", "-S"] if isolated else []), "-c", code, *args]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def _sandbox_paths() -> str:
    import evalyard_sandbox
    import RestrictedPython

    return os.pathsep.join(str(Path(m.__file__).resolve().parents[1]) for m in (evalyard_sandbox, RestrictedPython))


def measure(repeats: int) -> dict:
    from bench_sandbox import write_suite

    results: dict = {}
    cycles = [tuple(map(float, _run(FORK_CYCLE, _sandbox_paths(), isolated=True).split())) for _ in range(repeats)]
    results["fork_parent_ms"] = statistics.median(c[0] for c in cycles)
    results["fork_child_ms"] = statistics.median(c[1] for c in cycles)
    pages = 1000
    for kind in ("cow", "fresh"):
        ms = statistics.median(float(_run(PAGE_FAULTS, str(pages), kind, isolated=True)) for _ in range(repeats))
        results[f"{kind}_fault_us"] = ms * 1000 / pages
    with tempfile.TemporaryDirectory() as directory:
        suite = write_suite(Path(directory))
        results["in_process_ms"] = statistics.median(float(_run(IN_PROCESS, str(suite))) for _ in range(repeats))
        for policy in ("restricted", "os_only"):
            runs = [json.loads(_run(SANDBOX, str(suite), policy)) for _ in range(repeats)]
            if any(r["passed"] != 164 for r in runs):
                raise SystemExit(f"{policy}: not every canonical solution passed: {runs}")
            for key in ("child_sum_ms", "child_median_ms", "worker_per_run_ms", "compiler_per_run_ms"):
                results[f"{policy}_{key}"] = statistics.median(r[key] for r in runs)
    return results


def report(r: dict) -> list[str]:
    return [
        f"| fork + exit + reap, from a process holding the worker's modules: parent | {r['fork_parent_ms']:.2f} ms |",
        f"| ... the child's side (exit included) | {r['fork_child_ms']:.2f} ms |",
        f"| one copy-on-write fault in a forked child | {r['cow_fault_us']:.1f} us |",
        f"| one fresh (zero-filled) page in a forked child | {r['fresh_fault_us']:.1f} us |",
        f"| the 164 problems + tests run in one warm process, no sandbox | {r['in_process_ms']:.0f} ms |",
        f"| sandbox, restricted: the 164 children's CPU (sum / median child) | {r['restricted_child_sum_ms']:.0f} ms "
        f"/ {r['restricted_child_median_ms']:.1f} ms |",
        f"| sandbox, restricted: the worker's CPU per run (fork, bookkeeping) | "
        f"{r['restricted_worker_per_run_ms']:.1f} ms |",
        f"| sandbox, restricted: the compiler's CPU per run (tests + candidate) | "
        f"{r['restricted_compiler_per_run_ms']:.1f} ms |",
        f"| sandbox, os_only: the 164 children's CPU (sum / median child) | {r['os_only_child_sum_ms']:.0f} ms "
        f"/ {r['os_only_child_median_ms']:.1f} ms |",
        f"| sandbox, os_only: the worker's CPU per run | {r['os_only_worker_per_run_ms']:.1f} ms |",
        f"| sandbox, os_only: the compiler's CPU per run | {r['os_only_compiler_per_run_ms']:.1f} ms |",
    ]


def write_results(r: dict, command: str) -> Path:
    floor = 164 * (r["fork_parent_ms"] + r["fork_child_ms"]) + r["in_process_ms"]
    restricted = r["restricted_child_sum_ms"] + 164 * (r["restricted_worker_per_run_ms"]
                                                      + r["restricted_compiler_per_run_ms"])
    lines = [
        "## Sandbox floor",
        "",
        f"`{command}` - the pieces under a sandboxed sample's CPU, each measured in a fresh interpreter "
        f"(medians of the repeats). Python {platform.python_version()}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}.",
        "",
        "| piece | CPU |",
        "|---|---:|",
        *report(r),
        "",
        f"A fresh process per sample plus the problems' own work costs at least {floor:.0f} ms of CPU for the "
        f"164 (fork cycles + the work in-process); the sandbox spends {restricted:.0f} ms (children, worker and "
        "compiler). "
        "The difference is what a CPython child does besides the work: every object it touches is a "
        "copy-on-write fault (refcounts live in the objects), every allocation that needs a new page is a "
        "fresh-page fault, its exit frees every page it copied, and under the restricted policy every "
        "attribute read of the candidate goes through the attribute guard. See the Sandbox section for the "
        "end-to-end comparison.",
    ]
    return write_section("Sandbox floor", "\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="update the Sandbox floor section of RESULTS.md")
    args = parser.parse_args()
    results = measure(args.repeats)
    print("\n".join(report(results)))
    if args.write:
        path = write_results(results, ".venv/bin/python benchmarks/bench_sandbox_floor.py"
                             + (f" --repeats {args.repeats}" if args.repeats != 3 else "") + " --write")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
