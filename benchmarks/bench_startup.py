"""Start-up latency of the CLI: `evalyard --help` and `evalyard scorers`, as whole processes.

Target: `evalyard --help` median under 0.3 s on the development machine (2 cores).
Run: .venv/bin/python benchmarks/bench_startup.py [--runs N] [--write]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from results_file import write_section  # benchmarks/ is on sys.path when run as a script


def time_command(command: list[str], runs: int) -> tuple[list[float], list[float]]:
    """Wall-clock seconds and CPU seconds (user + system of the process) per run."""
    import resource

    subprocess.run(command, capture_output=True, check=True)  # warm the OS file cache
    samples, cpu = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True)
        samples.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return samples, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--write", action="store_true", help="update the Start-up section of RESULTS.md")
    args = parser.parse_args()
    import os
    import platform

    rows = []
    exe = str(Path(sys.executable).parent / "evalyard")
    if not Path(exe).exists():
        exe = shutil.which("evalyard") or exe
    for label, command in (("evalyard --help", [exe, "--help"]), ("evalyard scorers", [exe, "scorers"]),
                           ("python -c pass", [sys.executable, "-c", "pass"])):
        samples, cpu = time_command(command, args.runs)
        rows.append((label, statistics.median(samples), min(samples), max(samples), statistics.median(cpu)))
        print(f"{label:<18} median {rows[-1][1]:.3f} s  min {rows[-1][2]:.3f} s  max {rows[-1][3]:.3f} s  "
              f"CPU median {rows[-1][4]:.3f} s  ({args.runs} runs)")
    if args.write:
        scorers = subprocess.run([exe, "scorers", "--json"], capture_output=True, text=True, check=True).stdout
        import json

        plugins = sorted({s["plugin"] for s in json.loads(scorers)})
        lines = [
            "## Start-up",
            "",
            f"`.venv/bin/python benchmarks/bench_startup.py --runs {args.runs} --write` - whole processes, "
            f"{args.runs} timed runs after one warm-up, with every plugin installed ({', '.join(plugins)}). "
            f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, load average "
            f"{os.getloadavg()[0]:.2f} when started. Target: `evalyard --help` median under 0.3 s.",
            "",
            "| command | median (s) | min (s) | max (s) | median CPU (s) |",
            "|---|---:|---:|---:|---:|",
        ] + [f"| `{label}` | {median:.3f} | {low:.3f} | {high:.3f} | {cpu:.3f} |"
             for label, median, low, high, cpu in rows] + [
            "",
            "No start-up tricks: the garbage collector runs as usual, the process exits through the interpreter's "
            "normal shutdown, entry points come from `importlib.metadata`. Neither command imports torch, "
            "transformers, litellm, SQLAlchemy, NumPy or NLTK (tests/core/test_startup.py checks this with every "
            "installed plugin loaded). CPU is the steadier figure when the machine is shared.",
        ]
        print(f"wrote {write_section('Start-up', chr(10).join(lines))}")


if __name__ == "__main__":
    main()
