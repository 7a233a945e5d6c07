"""Many writers: N `evalyard run` processes of one new suite on one new database, started together.

Each writer is a real `evalyard run` (the CLI, in a process of its own) whose store calls are
timed: the longest single call (opening the database, storing the suite, creating the run, one
batch of results, the final status) is as long as that writer waited for the others, plus the
call's own work. Every writer first imports what it needs, then waits for one go signal, so
all of them reach the new database at the same instant.

Run: .venv/bin/python benchmarks/bench_writers.py --writers 16 --cases 200 --db sqlite --db postgres [--write]
(`--db postgres` starts a throwaway server with tests/postgres_server.py; `--url URL` uses yours,
in a new database it creates there).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import write_section  # benchmarks/ is on sys.path when run as a script

HERE = Path(__file__).resolve().parent
SCORERS = ("exact_match", "word_count_match")
DEADLINE_S = 600


# -- one writer (this file run with --writer) ------------------------------------------------
def _writer(timings_path: str, go_path: str, cli_args: list[str]) -> None:
    """Time every Store call of one `evalyard run`, started when ``go_path`` appears (and say
    when it is ready for it: ``timings_path`` + ``.ready``)."""
    import atexit
    import functools

    import evalyard.app  # noqa: F401  everything a run imports before it opens the store
    from evalyard.cli import cli
    from evalyard.store import Store

    calls: dict[str, list[float]] = {}

    def timed(name, method):
        @functools.wraps(method)
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                calls.setdefault(name, []).append(time.perf_counter() - start)
        return wrapper

    for name, method in list(vars(Store).items()):
        if callable(method) and (name == "__init__" or not name.startswith("_")):
            setattr(Store, name, timed("open" if name == "__init__" else name, method))
    started: list[float] = []
    atexit.register(lambda: Path(timings_path).write_text(json.dumps(
        {"calls": calls, "started": started[0], "ended": time.time()})))
    Path(timings_path + ".ready").touch()
    while not os.path.exists(go_path):
        time.sleep(0.005)
    started.append(time.time())
    cli(args=cli_args, prog_name="evalyard")


# -- the bench --------------------------------------------------------------------------------
def _database(kind: str, url: str | None, tmp: Path, server_holder: list) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp / 'writers.db'}"
    sys.path.insert(0, str(HERE.parent / "tests"))
    from postgres_server import PostgresServer

    name = f"writers_{os.getpid()}_{int(time.time() * 1000)}"
    if url:
        import psycopg

        # the URL's server, a new database on it (the bench wants a database with no schema)
        base = url.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(base, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return url.rsplit("/", 1)[0] + "/" + name
    if not server_holder:
        server = PostgresServer()
        server.start()
        server_holder.append(server)
    return server_holder[0].create_database(name)


def measure(kind: str, writers: int, cases: int, url: str | None, server_holder: list) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="evalyard-writers-"))
    suite = tmp / "writers.jsonl"
    suite.write_text("".join(
        json.dumps({"id": f"case-{i}", "candidate": f"answer {i % 7}", "reference": f"answer {i % 5}"}) + "\n"
        for i in range(cases)))
    db_url = _database(kind, url, tmp, server_holder)
    env = dict(os.environ, EVALYARD_HOME=str(tmp / "home"), EVALYARD_LOAD_PLUGINS="lexicon")
    go = tmp / "go"
    processes = []
    for i in range(writers):
        cli_args = ["run", str(suite), "--db", db_url, "--json", "--name", f"writer{i}"]
        for scorer in SCORERS:
            cli_args += ["-s", scorer]
        command = [sys.executable, str(Path(__file__).resolve()), "--writer", str(tmp / f"t{i}.json"), str(go),
                   "--", *cli_args]
        processes.append(subprocess.Popen(command, env=env, stdout=(tmp / f"w{i}.out").open("w"),
                                          stderr=(tmp / f"w{i}.err").open("w")))
    deadline = time.monotonic() + DEADLINE_S
    # the imports before the go signal are not timed: every writer says when it is ready
    while not all((tmp / f"t{i}.json.ready").exists() or p.poll() is not None for i, p in enumerate(processes)):
        if time.monotonic() > deadline:
            break
        time.sleep(0.02)
    load = os.getloadavg()[0]
    go.touch()
    started = time.time()
    codes = []
    for p in processes:
        try:
            codes.append(p.wait(timeout=max(0.1, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append(p.wait())
    wall = time.time() - started

    completed, longest, longest_call, per_writer, errors = 0, 0.0, "", [], []
    for i, code in enumerate(codes):
        err = (tmp / f"w{i}.err").read_text().strip()
        try:
            status = json.loads((tmp / f"w{i}.out").read_text())["status"]
        except (ValueError, KeyError):
            status = None
        if code == 0 and status == "completed" and "Traceback" not in err:
            completed += 1
        elif err:
            errors.append(err.splitlines()[-1][:200])
        timing_file = tmp / f"t{i}.json"
        if timing_file.exists():
            timing = json.loads(timing_file.read_text())
            per_writer.append(timing["ended"] - timing["started"])
            for name, seconds in timing["calls"].items():
                if max(seconds) > longest:
                    longest, longest_call = max(seconds), name
    counts = _counts(db_url)
    return {"db": kind, "writers": writers, "cases": cases, "completed": completed, "wall": wall,
            "writer_median": statistics.median(per_writer) if per_writer else None,
            "writer_max": max(per_writer) if per_writer else None, "longest_call": longest,
            "longest_call_name": longest_call, "load": load, "errors": errors, **counts,
            "expected_results": writers * cases * len(SCORERS)}


def _counts(db_url: str) -> dict:
    from sqlalchemy import create_engine, func, select

    from evalyard.store.models import CaseRow, ResultRow, SuiteRow

    engine = create_engine(db_url)
    try:
        with engine.connect() as connection:
            def count(table):
                return connection.execute(select(func.count()).select_from(table)).scalar_one()

            return {"suites": count(SuiteRow), "case_rows": count(CaseRow), "results": count(ResultRow)}
    except Exception as exc:  # no schema at all: every writer failed before creating it
        return {"suites": 0, "case_rows": 0, "results": 0, "count_error": str(exc).splitlines()[0]}
    finally:
        engine.dispose()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--writer":
        _writer(sys.argv[2], sys.argv[3], sys.argv[5:])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--db", action="append", choices=["sqlite", "postgres"],
                        help="repeatable (default: sqlite)")
    parser.add_argument("--url", help="a PostgreSQL server's URL (postgresql+psycopg://...) instead of a throwaway one")
    parser.add_argument("--write", action="store_true", help="update the Many writers section of RESULTS.md")
    args = parser.parse_args()
    server_holder: list = []
    rows = []
    try:
        for kind in args.db or ["sqlite"]:
            row = measure(kind, args.writers, args.cases, args.url, server_holder)
            rows.append(row)
            print(f"{kind}: {row['completed']}/{row['writers']} completed in {row['wall']:.1f} s; writer median "
                  f"{row['writer_median']:.1f} s, max {row['writer_max']:.1f} s; longest store call "
                  f"{row['longest_call']:.2f} s ({row['longest_call_name']}); suites {row['suites']}, "
                  f"cases {row['case_rows']}, results {row['results']} of {row['expected_results']}; "
                  f"load {row['load']:.1f}")
            for error in row["errors"][:3]:
                print(f"  {error}")
    finally:
        for server in server_holder:
            server.stop()
    if args.write:
        _write(args, rows)


def _write(args, rows: list[dict]) -> None:
    import platform

    dbs = " ".join(f"--db {r['db']}" for r in rows)
    lines = [
        "## Many writers",
        "",
        f"`.venv/bin/python benchmarks/bench_writers.py --writers {args.writers} --cases {args.cases} {dbs} --write`"
        f" - {args.writers} `evalyard run` processes of one new {args.cases}-case suite (`exact_match`, "
        f"`word_count_match`) on one new database, released together by one go signal after their imports. "
        f"'Longest store call' is the longest single Store call in any writer (opening the database, storing "
        f"the suite, creating the run, one batch of results, the status): the longest any writer waited for "
        f"the others, plus that call's own work. Python {platform.python_version()}, {os.cpu_count()} CPUs "
        f"shared with other engineers' work, {time.strftime('%Y-%m-%d')}.",
        "",
        "| database | completed | wall (s) | writer median (s) | writer max (s) | longest store call (s) "
        "| suite rows | case rows | results (expected) | load average |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {'SQLite (WAL)' if r['db'] == 'sqlite' else 'PostgreSQL 15' if not args.url else 'PostgreSQL'} "
            f"| {r['completed']}/{r['writers']} | {r['wall']:.1f} | {r['writer_median']:.1f} | {r['writer_max']:.1f} "
            f"| {r['longest_call']:.2f} ({r['longest_call_name']}) | {r['suites']} | {r['case_rows']} "
            f"| {r['results']} ({r['expected_results']}) | {r['load']:.1f} |")
    print(f"wrote {write_section('Many writers', chr(10).join(lines) + chr(10))}")


if __name__ == "__main__":
    main()
