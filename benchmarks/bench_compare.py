"""How long `evalyard compare` takes and how much memory it holds, for two large runs, with and
without --cluster.

Run: .venv/bin/python benchmarks/bench_compare.py [--cases 200000 600000] [--before-core DIR] [--write]

Two bulk synthetic runs of the same cases (evalyard.report.synthetic.write_bulk_run: a 0/1 and
a continuous scorer, 1% errors) in a fresh SQLite file, the cases grouped five to a "passage"
(case metadata). Each `evalyard compare BASE NEW --json --top 10` is its own process; its peak
memory is that process's maximum resident set (its own getrusage, reported at exit). --before-core DIR puts
another checkout's core/ first on PYTHONPATH (e.g. an older revision, unpacked with
`git archive REV core | tar -x -C DIR/..`), to measure the same command before a change.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from results_file import write_section  # benchmarks/ is on sys.path when run as a script

ROOT = Path(__file__).resolve().parent.parent
PASSAGE = 5  # cases per cluster


def make_runs(db_url: str, cases: int) -> tuple[str, str, float]:
    from sqlalchemy import text

    from evalyard.report.synthetic import write_bulk_run
    from evalyard.store import Store

    store = Store(db_url)
    started = time.perf_counter()
    base = write_bulk_run(store, cases, seed=11, name="base")
    new = write_bulk_run(store, cases, seed=12, name="new")
    with store.engine.begin() as connection:  # SQLite's json_object: this benchmark's store is SQLite
        connection.execute(text(f"UPDATE cases SET metadata = json_object('passage', 'p' || (position / {PASSAGE}))"))
    seconds = time.perf_counter() - started
    store.close()
    return base, new, seconds


#: Runs `evalyard` in this process and reports its own peak resident set on stderr at exit.
CHILD = ("import atexit, resource, sys\n"
         "atexit.register(lambda: sys.stderr.write('PEAK_KIB %d\\n' % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))\n"
         "sys.argv = ['evalyard', *sys.argv[1:]]\n"
         "from evalyard.console import main\n"
         "main()\n")


def timed_compare(db_url: str, base: str, new: str, extra: list[str], core: str | None) -> tuple[float, float]:
    """(seconds, peak MiB) of one `evalyard compare` process."""
    env = dict(os.environ)
    if core:
        env["PYTHONPATH"] = core + os.pathsep + env.get("PYTHONPATH", "")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, "compare", base, new, "--json", "--top", "10",
                           "--db", db_url, *extra], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    peaks = [line for line in done.stderr.splitlines() if line.startswith("PEAK_KIB ")]
    if done.returncode not in (0, 1) or not peaks:
        raise SystemExit(f"compare failed: {done.stderr.strip()}")
    return seconds, int(peaks[-1].split()[1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, nargs="+", default=[200_000])
    parser.add_argument("--before-core", help="another checkout's core/ directory, measured first as 'before'")
    parser.add_argument("--write", action="store_true", help="write the section of benchmarks/RESULTS.md")
    args = parser.parse_args()
    rows = []
    for cases in args.cases:
        with tempfile.TemporaryDirectory() as tmp:
            db_url = f"sqlite:///{Path(tmp) / 'compare.db'}"
            base, new, made = make_runs(db_url, cases)
            print(f"{cases:,} cases: two runs written in {made:.0f}s", flush=True)
            plans = [("after", [], None), ("after, --cluster metadata.passage", ["--cluster", "metadata.passage"], None)]
            if args.before_core:
                plans.append(("before", [], args.before_core))
            for label, extra, core in plans:
                seconds, mib = timed_compare(db_url, base, new, extra, core)
                rows.append((cases, label, seconds, mib))
                print(f"  {label}: {seconds:.1f}s, peak {mib:.0f} MiB", flush=True)
    lines = ["## Comparing large runs (compare, --cluster)", "",
             f"Measured {date.today().isoformat()} on {platform.machine()}, {os.cpu_count()} cores (shared), "
             f"Python {platform.python_version()}, SQLite.",
             f"Command: `python benchmarks/bench_compare.py --cases {' '.join(map(str, args.cases))}"
             + (" --before-core DIR" if args.before_core else "") + " --write`", "",
             "| cases (x2 scorers) | compare | time | peak memory |", "|---|---|---|---|"]
    lines += [f"| {cases:,} | {label} | {seconds:.1f} s | {mib:.0f} MiB |" for cases, label, seconds, mib in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write:
        print(f"wrote {write_section('Comparing large runs (compare, --cluster)', text)}")


if __name__ == "__main__":
    main()
