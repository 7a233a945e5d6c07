"""Runs of any size: evalyard against the floor (a plain script), for 100k, 1M and 5M cases.

Run (from the repository root; minutes at 1M, tens of minutes at 5M; alone on the machine):

    .venv/bin/python benchmarks/bench_scale.py --cases 100000 1000000 5000000 [--write]

The workload is the one users of cheap scorers run: a generated JSONL file (seeded; about 20
words in each of input, candidate and reference, 30% of candidates equal to their reference)
scored by ``exact_match`` and ``word_count_match``. Each command runs as its own process under
``/usr/bin/time``, which gives its wall time and peak RSS:

- the floor, ``benchmarks/scale_floor.py``: reads the file, scores with the same scorer classes,
  keeps cases and results in SQLite with executemany, nothing else;
- ``evalyard run`` into a new SQLite file, right after the floor (the ratio pairs the two);
- on that run: ``runs export`` (jsonl, csv; parquet when pyarrow is installed), ``runs show``,
  ``report`` (and the page's size).

The data files are kept in ``--data-dir`` (default: a folder under the system's temp dir) and
reused by later runs; databases are written to a new temp folder and deleted afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

from results_file import write_section  # benchmarks/ is on sys.path when run as a script

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
WORDS = ("the a of to and in is was for on with as by at from that this it be are have has not but or which "
         "their they we you can will more new time year people way day man thing woman life child world school "
         "state family student group country problem hand part place case week company system program question "
         "work government number night point home water room mother area money story fact month lot right study "
         "book eye job word business issue side kind head house service friend father power hour game line end "
         "member law car city community name president team minute idea kid body information").split()


def data_file(directory: Path, cases: int) -> Path:
    path = directory / f"scale_{cases}.jsonl"
    if path.exists():
        return path
    rng = random.Random(cases)

    def text(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    partial = path.with_suffix(".partial")
    with open(partial, "w", encoding="utf-8") as handle:
        for i in range(cases):
            reference = text(20)
            candidate = reference if rng.random() < 0.3 else text(rng.randint(15, 25))
            handle.write(json.dumps({"id": f"case-{i}", "input": text(20), "candidate": candidate,
                                     "reference": reference}) + "\n")
    partial.rename(path)
    return path


def timed(command: list[str], stdout=subprocess.DEVNULL) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one command, from /usr/bin/time."""
    report = tempfile.NamedTemporaryFile(suffix=".time", delete=False)
    report.close()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(["/usr/bin/time", "-o", report.name, "-f", "%e %M", *command], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(command)}\n{done.stderr[-2000:]}")
    wall, rss_kb = Path(report.name).read_text().split()[-2:]
    os.unlink(report.name)
    return float(wall), int(rss_kb) / 1024


def has_pyarrow() -> bool:
    return subprocess.run([sys.executable, "-c", "import pyarrow"], capture_output=True).returncode == 0


def measure(cases: int, data_dir: Path, work: Path) -> dict:
    data = data_file(data_dir, cases)
    floor_db, db = work / f"floor_{cases}.db", work / f"evalyard_{cases}.db"
    row: dict = {"cases": cases}
    row["floor"] = timed([sys.executable, str(ROOT / "benchmarks" / "scale_floor.py"), str(data), str(floor_db)])
    url = f"sqlite:///{db}"
    row["run"] = timed([str(BIN / "evalyard"), "run", str(data), "-s", "exact_match", "-s", "word_count_match",
                        "--name", f"scale-{cases}", "--db", url])
    row["show"] = timed([str(BIN / "evalyard"), "runs", "show", f"scale-{cases}", "--db", url])
    formats = ["jsonl", "csv"] + (["parquet"] if has_pyarrow() else [])
    for fmt in formats:
        out = work / f"export.{fmt}"
        row[f"export {fmt}"] = timed([str(BIN / "evalyard"), "runs", "export", f"scale-{cases}", "--format", fmt,
                                      "-o", str(out), "--db", url])
        row[f"export {fmt} MB"] = out.stat().st_size / 1e6
        out.unlink()
    page = work / "report.html"
    row["report"] = timed([str(BIN / "evalyard"), "report", f"scale-{cases}", "-o", str(page), "--db", url])
    row["report MB"] = page.stat().st_size / 1e6
    for path in work.glob("*.db*"):
        path.unlink()
    return row


def ray_run(cases: int, data_dir: Path, work: Path) -> dict:
    """The same run with ``--executor ray`` on a 2-node cluster (``bench_ray.py``'s, one CPU a node):
    the driver's wall time and peak RSS, and every (case, scorer) counted once."""
    import sqlite3

    from bench_ray import Cluster

    data = data_file(data_dir, cases)
    cluster = Cluster(Path(tempfile.mkdtemp(prefix="eysr")))  # short: Ray's socket paths must fit 107 bytes
    cluster.env["RAY_AUTH_MODE"] = "disabled"  # a loopback cluster of this script's own: no token to share
    try:
        cluster.start_node(head=True)
        cluster.start_node(head=False)
        os.environ.update({"RAY_TMPDIR": cluster.env["RAY_TMPDIR"], "RAY_AUTH_MODE": "disabled",
                           "EVALYARD_RAY_ADDRESS": cluster.address})
        db = work / f"ray_{cases}.db"
        wall, rss = timed([str(BIN / "evalyard"), "run", str(data), "-s", "exact_match", "-s", "word_count_match",
                           "--executor", "ray", "--name", f"scale-ray-{cases}", "--db", f"sqlite:///{db}"])
        with sqlite3.connect(db) as con:
            total, distinct = con.execute(
                "select count(*), count(distinct case_id || '|' || scorer) from results").fetchone()
        return {"cases": cases, "ray": (wall, rss), "results": total, "distinct": distinct}
    finally:
        for key in ("RAY_TMPDIR", "RAY_AUTH_MODE", "EVALYARD_RAY_ADDRESS"):
            os.environ.pop(key, None)
        cluster.stop()


def table(rows: list[dict]) -> str:
    lines = ["| cases | floor | `evalyard run` | ratio | export jsonl | export csv | export parquet | "
             "`runs show` | `report` (page) |",
             "|---|---|---|---|---|---|---|---|---|"]

    def cell(pair) -> str:
        return f"{pair[0]:.1f} s, {pair[1]:.0f} MB" if pair else "-"

    for r in rows:
        parquet = cell(r.get("export parquet"))
        lines.append(
            f"| {r['cases']:,} | {cell(r['floor'])} | {cell(r['run'])} | **{r['run'][0] / r['floor'][0]:.2f}x** | "
            f"{cell(r['export jsonl'])} | {cell(r['export csv'])} | {parquet} | {cell(r['show'])} | "
            f"{cell(r['report'])} ({r['report MB']:.1f} MB) |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "evalyard-bench-scale")
    parser.add_argument("--ray", type=int, metavar="CASES",
                        help="only the `--executor ray` run of this many cases on a 2-node cluster")
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    args = parser.parse_args()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    if args.ray:
        with tempfile.TemporaryDirectory(prefix="evalyard-scale-") as work:
            row = ray_run(args.ray, args.data_dir, Path(work))
        line = (f"| {row['cases']:,} | {row['ray'][0]:.1f} s | {row['ray'][1]:.0f} MB | {row['results']:,} | "
                f"{row['distinct']:,} |")
        print(line)
        if args.write:
            section = (
                "## Runs at scale on Ray: the driver's memory\n\n"
                f"Measured {date.today().isoformat()}, {os.cpu_count()} CPUs: `evalyard run` of the workload above "
                "with `--executor ray` on a 2-node cluster started with `ray start` (one CPU a node, "
                "`bench_ray.py`'s cluster); wall time and peak RSS of the driver process (`/usr/bin/time`; the "
                "actors are the cluster's processes), and the result rows counted in the database.\n\n"
                f"Command: `.venv/bin/python benchmarks/bench_scale.py --ray {args.ray} --write`\n\n"
                "| cases | driver wall | driver peak RSS | result rows | distinct (case, scorer) |\n"
                "|---|---|---|---|---|\n" + line + "\n")
            title = "Runs at scale on Ray: the driver's memory"
            print(f"wrote {write_section(title, section)}")
        return
    rows = []
    with tempfile.TemporaryDirectory(prefix="evalyard-scale-") as work:
        for cases in args.cases:
            rows.append(measure(cases, args.data_dir, Path(work)))
            print(table(rows[-1:]), flush=True)
    body = table(rows)
    print(body)
    if args.write:
        load = os.getloadavg()[0]
        section = (
            "## Runs at scale: evalyard against a plain script\n\n"
            f"Measured {date.today().isoformat()} on {platform.machine()}, {os.cpu_count()} CPUs, Python "
            f"{platform.python_version()}, load average {load:.1f} when it ended. Each cell is one process's wall "
            "time and peak RSS (`/usr/bin/time`). Workload: a JSONL file of N cases (about 20 words in each of input, "
            "candidate and reference) scored by `exact_match` and `word_count_match`; the floor "
            "(`benchmarks/scale_floor.py`) reads the same file, scores with the same scorer classes and keeps cases "
            "and results in SQLite with executemany; the ratio is evalyard's run time over the floor's.\n\n"
            f"Command: `.venv/bin/python benchmarks/bench_scale.py --cases {' '.join(map(str, args.cases))} "
            "--write`\n\n" + body + "\n")
        print(f"wrote {write_section('Runs at scale: evalyard against a plain script', section)}")


if __name__ == "__main__":
    main()
