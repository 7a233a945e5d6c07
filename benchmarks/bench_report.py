"""How long `evalyard report` takes and how large the page is, for 1,000 and 10,000 cases x 5 scorers.

Run: .venv/bin/python benchmarks/bench_report.py [--cases 1000 10000] [--repeats 3] [--write]

Each run is synthetic (evalyard.report.synthetic: realistic text lengths and details shapes,
1% scorer errors) in a fresh SQLite file. Timed in process, best of the repeats: reading the
run from the store, rendering the page, and both together; plus the whole `evalyard report`
command once (start-up included). Where Debian's chromium is installed, the page is opened
headless and the load time and one filter change (failed cases only) are measured in the page.
"""

from __future__ import annotations

import argparse
import gzip
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from chromium import headless_chromium  # benchmarks/ is on sys.path when run as a script
from results_file import write_section

ROOT = Path(__file__).resolve().parent.parent


def best(repeats: int, fn):
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return min(times), result


def browser_timings(path: Path) -> tuple[float, float] | None:
    """(page load to ready, one filter change) in seconds, or None without chromium."""
    driver = headless_chromium()
    if driver is None:
        return None
    try:
        started = time.perf_counter()
        driver.get(path.as_uri())
        loaded = time.perf_counter() - started
        filter_ms = driver.execute_script("""
            var s = document.getElementById('f-status'); s.value = 'failed';
            var t = performance.now(); s.dispatchEvent(new Event('change')); return performance.now() - t;""")
        return loaded, filter_ms / 1000
    finally:
        driver.quit()


def measure(cases: int, repeats: int, work: Path) -> dict:
    from evalyard.report.compare_data import gather_compare  # noqa: F401  (import cost outside the timings)
    from evalyard.report.data import gather_run
    from evalyard.report.render import render_report
    from evalyard.report.synthetic import write_synthetic_run
    from evalyard.store import Store

    db = work / f"bench-{cases}.db"
    store = Store(f"sqlite:///{db}")
    run_id = write_synthetic_run(store, cases)
    run = store.get_run(run_id)
    gather_s, gathered = best(repeats, lambda: gather_run(store, run))
    render_s, html = best(repeats, lambda: render_report(gathered))
    total_s, html = best(repeats, lambda: render_report(gather_run(store, run)))
    store.close()
    page = work / f"report-{cases}.html"
    page.write_text(html, encoding="utf-8")
    exe = Path(sys.executable).parent / "evalyard"
    started = time.perf_counter()
    subprocess.run([str(exe), "report", run_id, "--db", f"sqlite:///{db}", "-o", str(work / "cli.html")],
                   check=True, capture_output=True)
    cli_s = time.perf_counter() - started
    data = html.encode("utf-8")
    return {"cases": cases, "gather_s": gather_s, "render_s": render_s, "total_s": total_s, "cli_s": cli_s,
            "bytes": len(data), "gzip_bytes": len(gzip.compress(data)), "browser": browser_timings(page)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="update the Reports section of RESULTS.md")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        for cases in args.cases:
            row = measure(cases, args.repeats, Path(tmp))
            rows.append(row)
            browser = row["browser"]
            print(f"{cases:>6} cases: gather {row['gather_s']:.2f} s, render {row['render_s']:.2f} s, "
                  f"together {row['total_s']:.2f} s, CLI {row['cli_s']:.2f} s; {row['bytes'] / 2**20:.1f} MiB "
                  f"({row['gzip_bytes'] / 2**20:.1f} MiB gzipped)"
                  + (f"; chromium load {browser[0]:.2f} s, filter {browser[1] * 1000:.0f} ms" if browser else ""),
                  flush=True)
    if args.write:
        lines = [
            "## Reports", "",
            f"`.venv/bin/python benchmarks/bench_report.py --cases {' '.join(map(str, args.cases))} "
            f"--repeats {args.repeats} --write` - synthetic runs (`evalyard.report.synthetic`: 5 scorers, "
            "judge reasoning, checklist items, claims, tracebacks, 1% scorer errors) in SQLite; in-process times "
            f"are the best of {args.repeats}. Python {platform.python_version()}, {platform.machine()}, "
            f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} when written, {date.today().isoformat()}.",
            "",
            "| cases x scorers | read run | render | report (both) | `evalyard report` process | page size | gzipped "
            "| chromium: load | chromium: filter to failed |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for row in rows:
            browser = row["browser"]
            lines.append(
                f"| {row['cases']:,} x 5 | {row['gather_s']:.2f} s | {row['render_s']:.2f} s | {row['total_s']:.2f} s "
                f"| {row['cli_s']:.2f} s | {row['bytes'] / 2**20:.1f} MiB | {row['gzip_bytes'] / 2**20:.1f} MiB "
                f"| {f'{browser[0]:.2f} s' if browser else 'n/a'} | {f'{browser[1] * 1000:.0f} ms' if browser else 'n/a'} |")
        lines += ["", "The page embeds every case's input, candidate, reference, context and each result's details "
                  "(column arrays, values to six significant digits); text is most of its size. Above 1 MiB the "
                  "data is gzipped and base64-encoded inside the page (plain, the 10,000-case page is 12.3 MiB). "
                  "\"gzipped\" is the whole page compressed again, as a CI artefact store keeps it. The table puts "
                  "one page of rows (50 by default) in the DOM, so filtering and sorting stay fast at any size."]
        print(f"wrote {write_section('Reports', chr(10).join(lines))}")


if __name__ == "__main__":
    main()
