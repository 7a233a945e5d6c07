"""Outputs of a large run: export (JSONL, CSV, Parquet), `runs show`, `report` and the dashboard's
first page, each timed as the real command with its peak memory.

Run: .venv/bin/python benchmarks/bench_outputs.py [--cases 1000000] [--db URL --run RUN] [--write]
(with --db, the table in RESULTS.md names the database's run instead of a freshly built one)

Without --db, a run of --cases cases x two cheap scorers (pass/fail and continuous, 1% errors)
is inserted into a fresh SQLite file with SQLAlchemy Core executemany and its totals set as the
runner sets them (evalyard.report.synthetic.write_bulk_run). Each command runs in a subprocess
started by a small wrapper that reports the command's peak RSS (getrusage(RUSAGE_CHILDREN) of
the wrapper, so one measurement per child). The dashboard is `evalyard serve` in a subprocess:
the time of the first GET of the run's page, and the server's peak RSS (VmHWM) after it.
"""

from __future__ import annotations

import argparse
import platform
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import date
from pathlib import Path

from chromium import headless_chromium  # benchmarks/ is on sys.path when run as a script
from results_file import write_section

EVALYARD = str(Path(sys.executable).parent / "evalyard")
#: Runs a command and prints its peak RSS (KiB, Linux) on the last line of stderr.
WRAPPER = ("import resource, subprocess, sys\n"
           "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n"
           "print('peak_rss_kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
           "sys.exit(code)\n")


def timed(args: list[str]) -> tuple[float, int]:
    """(seconds, peak RSS in MiB) of one command."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", WRAPPER, *args], capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"{' '.join(args)} failed: {done.stderr[-2000:]}")
    rss = int(re.findall(r"peak_rss_kib (\d+)", done.stderr)[-1])
    return elapsed, rss // 1024


def dashboard(db: str, run_id: str, paths: list[str]) -> list[tuple[float, int, int]]:
    """Per path in turn: (seconds for the GET, the server's peak RSS in MiB so far, the page's bytes)."""
    server = subprocess.Popen([EVALYARD, "serve", "--db", db, "--port", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        port = int(re.search(r":(\d+)/", line).group(1))
        out = []
        for path in paths:
            started = time.perf_counter()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=600) as response:
                body = response.read()
            elapsed = time.perf_counter() - started
            status = Path(f"/proc/{server.pid}/status").read_text()
            out.append((elapsed, int(re.search(r"VmHWM:\s+(\d+)", status).group(1)) // 1024, len(body)))
        return out
    finally:
        server.terminate()
        server.wait(timeout=10)


def chromium_ready(page: Path) -> float | None:
    """Seconds from opening the page in headless Chromium until its script is ready (None without it)."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver = headless_chromium()
    if driver is None:
        return None
    try:
        started = time.perf_counter()
        driver.get(page.as_uri())
        WebDriverWait(driver, 120).until(lambda d: d.execute_script("return document.body.hasAttribute('data-ready')"))
        return time.perf_counter() - started
    finally:
        driver.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1_000_000)
    parser.add_argument("--db", help="an existing database (URL or SQLite path) instead of building one")
    parser.add_argument("--run", help="the run to measure in --db (default: its newest run)")
    parser.add_argument("--write", action="store_true", help="write the table into benchmarks/RESULTS.md")
    args = parser.parse_args()

    from evalyard.report.synthetic import write_bulk_run
    from evalyard.store import Store

    work = Path(tempfile.mkdtemp(prefix="bench-outputs-"))
    build_s = None
    if args.db:
        db = args.db
        store = Store(db)
        run_id = store.get_run(args.run).id if args.run else store.list_runs(limit=1)[0][0].id
    else:
        db = f"sqlite:///{work / 'outputs.db'}"
        store = Store(db)
        started = time.perf_counter()
        run_id = write_bulk_run(store, args.cases)
        build_s = time.perf_counter() - started
    cases = store.suite_of(store.get_run(run_id)).case_count
    results = store.result_count(run_id)
    store.close()
    print(f"run {run_id}: {cases:,} cases, {results:,} results" + (f" (built in {build_s:.0f} s)" if build_s else ""),
          flush=True)

    rows = []
    for fmt in ("jsonl", "csv", "parquet"):
        out = work / f"results.{fmt}"
        command = ["runs", "export", run_id, "--format", fmt, "-o", str(out)]
        seconds, rss = timed([EVALYARD, *command, "--db", db])
        rows.append((f"evalyard runs export RUN --format {fmt} -o FILE", seconds, rss, out.stat().st_size))
        out.unlink()
        print(rows[-1], flush=True)
    seconds, rss = timed([EVALYARD, "runs", "show", run_id, "--db", db])
    rows.append(("evalyard runs show RUN", seconds, rss, None))
    print(rows[-1], flush=True)
    seconds, rss = timed([EVALYARD, "runs", "show", run_id, "--json", "--db", db])
    rows.append(("evalyard runs show RUN --json", seconds, rss, None))
    print(rows[-1], flush=True)
    page = work / "report.html"
    seconds, rss = timed([EVALYARD, "report", run_id, "-o", str(page), "--db", db])
    rows.append(("evalyard report RUN -o FILE", seconds, rss, page.stat().st_size))
    print(rows[-1], flush=True)
    ready = chromium_ready(page)
    if ready is not None:
        rows.append(("the report page in headless Chromium, open to ready", ready, None, None))
        print(rows[-1], flush=True)
    last_page = cases // 50 - 1
    pages = {"evalyard serve: GET /runs/RUN (first page)": f"/runs/{run_id}",
             f"evalyard serve: GET /runs/RUN?page={last_page} (the last)": f"/runs/{run_id}?page={last_page}",
             "evalyard serve: GET /runs/RUN?page=1000&scorer=overlap&failing=1": f"/runs/{run_id}?page=1000&scorer=overlap&failing=1"}
    for name, (seconds, rss, size) in zip(pages, dashboard(db, run_id, list(pages.values()))):
        rows.append((name, seconds, rss, size))
        print(rows[-1], flush=True)

    table = ["| command | time (s) | peak RSS (MiB) | output |", "|---|---:|---:|---:|"]
    for name, seconds, rss, size in rows:
        size_text = "" if size is None else f"{size / 2**20:,.2f} MiB"
        table.append(f"| `{name}` | {seconds:.2f} | {'' if rss is None else rss} | {size_text} |")
    text = "\n".join(table)
    print(text)
    if args.write:
        body = (f"## Outputs at scale\n\n"
                f"{date.today().isoformat()}, {platform.machine()}, {platform.python_version()}, "
                f"SQLite file; a run of {cases:,} cases x 2 cheap scorers ({results:,} results), built with "
                f"`write_bulk_run`{f' in {build_s:.0f} s' if build_s else ''}. Each command is the real CLI in a "
                f"subprocess (start-up included), timed once on the shared 2-core machine; peak RSS of that "
                f"process (the dashboard: the server's VmHWM after each page, one server answering the pages in "
                f"the order listed; Chromium: the report page's load until its script is ready). "
                f"Before these commands streamed (issue 33's figures on a run of the same size): export --format "
                f"jsonl 69 s and 3.9 GB, runs show 15 s, report 66 s and 2.8 GB for a 119 MB page.\n\n"
                f"```\n.venv/bin/python benchmarks/bench_outputs.py --cases {cases} --write\n```\n\n{text}\n")
        print(f"wrote {write_section('Outputs at scale', body)}")


if __name__ == "__main__":
    main()
