"""BERTScore through `evalyard run`: the inline executor against `--executor process -j 2`.

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_executors.py            # print the table
    .venv/bin/python benchmarks/bench_executors.py --write    # also update RESULTS.md ("## Executors")

The workload: 2,000 generated (reference, candidate) pairs of distinct texts (the embedding
benchmark's generator), one JSONL file, scored by `bertscore` (the bundled model, its
defaults: batches of 256 cases) with

- ``evalyard run PAIRS.jsonl -s bertscore -j 2 --json`` (the inline executor: two batches in
  flight on threads of one process, which share torch's thread pool), and
- ``evalyard run PAIRS.jsonl -s bertscore --executor process -j 2 --json`` (two spawned worker
  processes, each loading the model and running torch on its share of the CPUs).

Each command is timed as a whole process -- start-up and model loading included, as a user
waits for it -- with a fresh database each time, alternating the two over the rounds so
background load hits both alike; one untimed run first warms the disk cache. Besides wall
time, CPU time of the whole process tree is recorded. Both must give the same mean F1.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_embedding import make_pairs  # benchmarks/ is on sys.path when run as a script
from bench_sandbox import timed
from results_file import write_section

N_PAIRS = 2_000
SEED = 20251125
EVALYARD = str(Path(sys.executable).parent / "evalyard")
CONTENDERS = {
    "inline, `-j 2`": ["-j", "2"],
    "process, `--executor process -j 2`": ["--executor", "process", "-j", "2"],
}


def write_pairs(path: Path, n: int) -> None:
    with path.open("w") as out:
        for i, (reference, candidate) in enumerate(make_pairs(n, SEED)):
            out.write(json.dumps({"id": f"p{i}", "reference": reference, "candidate": candidate}) + "\n")


def run(rounds: int, n: int) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="bench-executors-"))
    pairs = workdir / "pairs.jsonl"
    write_pairs(pairs, n)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.pop("EVALYARD_DB", None)
    base = [EVALYARD, "run", str(pairs), "-s", "bertscore", "--json"]

    def one(extra: list[str], tag: str) -> tuple[float, float, float]:
        env["EVALYARD_HOME"] = str(workdir / f"home-{tag}")  # a fresh database each time
        elapsed, cpu, stdout = timed(base + extra, env)
        summary = json.loads(stdout)["scorers"]["bertscore"]
        assert summary["count"] == n and not summary.get("errors"), summary
        return elapsed, cpu, summary["mean"]

    one(CONTENDERS["inline, `-j 2`"], "warm-up")
    wall: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    cpu: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    means: dict[str, float] = {}
    loads = [os.getloadavg()[0]]
    for r in range(1, rounds + 1):
        for name, extra in CONTENDERS.items():
            elapsed, cpu_s, mean = one(extra, f"{r}-{len(wall[name])}-{extra[-1]}{extra[0]}")
            wall[name].append(elapsed)
            cpu[name].append(cpu_s)
            means[name] = mean
            print(f"round {r} {name:38s} {elapsed:6.1f} s wall, {cpu_s:6.1f} s CPU, mean F1 {mean:.6f}", flush=True)
    loads.append(os.getloadavg()[0])
    values = list(means.values())
    assert max(values) - min(values) < 1e-6, means
    return {"wall": wall, "cpu": cpu, "mean_f1": values[0], "rounds": rounds, "pairs": n, "loads": loads}


def write_results(result: dict, command: str) -> Path:
    med = statistics.median
    inline, process = CONTENDERS
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    lines = [
        "## Executors",
        "",
        f"`{command}` - `bertscore` over {result['pairs']:,} generated pairs of distinct texts (the bundled "
        f"all-MiniLM-L6-v2, batches of 256), each command a whole `evalyard run` process (start-up and model "
        f"loading included) with a fresh database; {result['rounds']} alternating rounds after one warm-up run. "
        f"Python {platform.python_version()}, {platform.machine()}, {cpus} CPUs shared with other engineers' work, "
        f"1-minute load average {result['loads'][0]:.1f} at the start and {result['loads'][1]:.1f} at the end, "
        f"{time.strftime('%Y-%m-%d')}. CPU: user + system of the whole process tree.",
        "",
        "| executor | median wall (s) | best wall (s) | median CPU (s) | mean F1 |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in CONTENDERS:
        lines.append(f"| {name} | {med(result['wall'][name]):.1f} | {min(result['wall'][name]):.1f} | "
                     f"{med(result['cpu'][name]):.1f} | {result['mean_f1']:.6f} |")
    ratio = med(result["wall"][inline]) / med(result["wall"][process])
    lines += [
        "",
        f"process / inline: **{ratio:.2f}x** the speed (ratio of median wall times). Each worker of the process "
        "executor runs torch, BLAS and OpenMP on its share of the CPUs (CPUs // workers, at least one thread; "
        "`OMP_NUM_THREADS`, `MKL_NUM_THREADS`, `OPENBLAS_NUM_THREADS` set before torch loads, "
        "`torch.set_num_threads` if it already has).",
        "",
    ]
    return write_section("Executors", "\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of the two commands")
    parser.add_argument("--pairs", type=int, default=N_PAIRS, help="pairs to score")
    parser.add_argument("--write", action="store_true", help="update the Executors section of RESULTS.md")
    args = parser.parse_args()
    result = run(args.rounds, args.pairs)
    med = statistics.median
    for name in CONTENDERS:
        print(f"{name:38s} median {med(result['wall'][name]):6.1f} s wall, {med(result['cpu'][name]):6.1f} s CPU")
    if args.write:
        command = ".venv/bin/python " + " ".join(["benchmarks/bench_executors.py", *sys.argv[1:]])
        print("wrote", write_results(result, command))


if __name__ == "__main__":
    main()
