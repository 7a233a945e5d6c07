"""Peak RSS of ``evalyard collect`` while 16 clients POST a ~15 MiB OTLP/JSON body each, at once.

    .venv/bin/python benchmarks/bench_collect_memory.py [--clients 16] [--spans 60000]

The receiver spools bodies to disk side by side and decodes, checks and stores one at a time, so
its peak is one request's, not the sum of those in flight.
"""

from __future__ import annotations

import argparse
import http.client
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from collect_server import span_request  # noqa: E402  (the tests' OTLP request builder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--spans", type=int, default=60_000)
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp()) / "collected.otlp.jsonl"
    exe = str(Path(sys.executable).parent / "evalyard")
    proc = subprocess.Popen([exe, "collect", str(out), "--port", "0", "--token", "t"], stdout=subprocess.PIPE, text=True)
    port = int(proc.stdout.readline().split()[3].rsplit(":", 1)[1])

    def peak_mib() -> int:
        with open(f"/proc/{proc.pid}/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM")) // 1024

    def post(body: bytes) -> int:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        connection.request("POST", "/v1/traces", body=body,
                           headers={"Content-Type": "application/json", "Authorization": "Bearer t"})
        response = connection.getresponse()
        response.read()
        connection.close()
        return response.status

    body = json.dumps(span_request(n=args.spans)).encode()
    post(json.dumps(span_request()).encode())  # warm: imports done, one small request stored
    before = peak_mib()
    statuses: list[int] = []
    threads = [threading.Thread(target=lambda: statuses.append(post(body))) for _ in range(args.clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(f"body {len(body) / 2**20:.1f} MiB x {args.clients}: statuses {sorted(set(statuses))} in "
          f"{time.monotonic() - started:.1f} s; peak RSS before {before} MiB, after {peak_mib()} MiB")
    proc.terminate()
    proc.wait()


if __name__ == "__main__":
    main()
