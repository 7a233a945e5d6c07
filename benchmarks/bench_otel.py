"""How fast `evalyard run --otel` sends a run, and whether its memory stays flat as the run grows.

Run: .venv/bin/python benchmarks/bench_otel.py [--results 20000 200000] [--write]

For each size, a run with that many stored results (1% scorer errors, a reasoning text each) is
written straight into a fresh SQLite file, then a separate process exports it with
``evalyard.otel.export_run`` to an OTLP/HTTP sink in this process that reads and acknowledges
every request. Reported: the export's wall time, events per second and the exporting
process's peak RSS (flat memory: the same peak whatever the number of results).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import threading
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from results_file import write_section  # benchmarks/ is on sys.path when run as a script

EXPORT = """
import json, resource, sys, time
from evalyard import otel
from evalyard.store import Store
store = Store(sys.argv[1])
started = time.perf_counter()
warning = otel.export_run(store, sys.argv[2], sys.argv[3])
print(json.dumps({"seconds": time.perf_counter() - started, "warning": warning,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def sink() -> tuple[ThreadingHTTPServer, dict]:
    seen = {"requests": 0}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen["requests"] += 1
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


def stored_run(db: str, results: int) -> str:
    from evalyard import evaluate
    from evalyard.store import Store

    run = evaluate([{"id": "c0", "candidate": "x", "reference": "x"}], ["contains"], db=db, name=f"otel-{results}")
    store = Store(db)
    for start in range(1, results, 20_000):
        store.write_results(run.run_id, [
            {"case_id": f"c{i}", "scorer": "contains", "value": None if i % 100 == 0 else float(i % 2),
             "passed": None if i % 100 == 0 else bool(i % 2), "details": {"reasoning": f"case {i}: the answer is there"},
             "error": "ValueError: scripted failure" if i % 100 == 0 else None}
            for i in range(start, min(results, start + 20_000))])
    store.close()
    return run.run_id


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--results", type=int, nargs="+", default=[20_000, 200_000])
    parser.add_argument("--write", action="store_true", help="write the figures into RESULTS.md")
    args = parser.parse_args()
    server, seen = sink()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for results in args.results:
            db = str(Path(tmp) / f"otel-{results}.db")
            run_id = stored_run(db, results)
            before = seen["requests"]
            out = subprocess.run([sys.executable, "-c", EXPORT, db, run_id, endpoint], capture_output=True,
                                 text=True, check=True)
            figures = json.loads(out.stdout)
            assert figures["warning"] is None, figures["warning"]
            rows.append((results, figures["seconds"], results / figures["seconds"], figures["peak_rss_mb"],
                         seen["requests"] - before))
            print(f"{results} results: {figures['seconds']:.1f} s, {results / figures['seconds']:,.0f} events/s, "
                  f"peak RSS {figures['peak_rss_mb']:.0f} MB, {seen['requests'] - before} requests", flush=True)
    server.shutdown()
    if args.write:
        lines = ["## OpenTelemetry export", "",
                 f"`benchmarks/bench_otel.py`, {date.today()}, Python {platform.python_version()}, "
                 "this project's 2-core machine (shared): a stored run sent by `evalyard.otel.export_run` "
                 "(one span, one `gen_ai.evaluation.result` event per result, 1,000 results per round trip) "
                 "to a local OTLP/HTTP sink.", "",
                 "| results | seconds | events/s | peak RSS of the exporting process | HTTP requests |",
                 "|---:|---:|---:|---:|---:|"]
        lines += [f"| {r:,} | {s:.1f} | {e:,.0f} | {m:.0f} MB | {q} |" for r, s, e, m, q in rows]
        write_section("OpenTelemetry export", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
