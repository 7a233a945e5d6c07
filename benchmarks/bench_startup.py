"""Start-up latency of the CLI: `evalyard --help` and `evalyard scorers`, as whole processes.

Target: `evalyard --help` median under 0.3 s on the development machine (2 cores).
Run: .venv/bin/python benchmarks/bench_startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def time_command(command: list[str], runs: int) -> list[float]:
    subprocess.run(command, capture_output=True, check=True)  # warm the OS file cache
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True)
        samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    exe = str(Path(sys.executable).parent / "evalyard")
    if not Path(exe).exists():
        exe = shutil.which("evalyard") or exe
    for label, command in (("evalyard --help", [exe, "--help"]), ("evalyard scorers", [exe, "scorers"]),
                           ("python -c pass", [sys.executable, "-c", "pass"])):
        samples = time_command(command, args.runs)
        print(f"{label:<18} median {statistics.median(samples):.3f} s  min {min(samples):.3f} s  "
              f"max {max(samples):.3f} s  ({args.runs} runs)")


if __name__ == "__main__":
    main()
