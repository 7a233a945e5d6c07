"""Image cases at scale: memory and time of runs whose cases each hold an image, and media stored once.

Run (from the repository root, alone on the machine; a few minutes at 100k):

    .venv/bin/python benchmarks/bench_media.py --cases 10000 100000 --repeat-runs 10 [--write]

1. For each size N, a JSONL file of N cases, each asking about its own small PNG (16x16, distinct
   per case, about 100 bytes, in a folder beside the data) with a candidate and reference,
   scored by ``contains`` (deterministic, no model); and the same N cases without the image (the
   input's text alone). Each ``evalyard run`` is its own process under ``/usr/bin/time`` (wall
   time, peak RSS) into a new SQLite file. Flat memory: the peak at 100k is the peak at 10k.
2. Ten runs over one suite of 1,000 image cases into one database: the ``media`` table's bytes
   and the database's size (the file and its write-ahead log) after each run: the media are added
   by the first run only, each later run adds its own rows (candidates, results), not media.

Timings are taken only when ``uptime``'s one-minute load is under 1.5 (polled every 60 s).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from bench_scale import timed  # benchmarks/ is on sys.path when run as a script
from results_file import write_section

BIN = Path(sys.executable).parent


def quiet_machine(limit: float = 1.5) -> None:
    while True:
        load = os.getloadavg()[0]
        if load < limit:
            return
        print(f"load {load:.2f} >= {limit}: waiting 60 s", file=sys.stderr)
        time.sleep(60)


def data_files(directory: Path, cases: int) -> tuple[Path, Path]:
    """(the image cases, the same cases as text) for ``cases`` cases, made once."""
    from PIL import Image

    images = directory / f"media_{cases}.jsonl"
    plain = directory / f"plain_{cases}.jsonl"
    if images.exists() and plain.exists():
        return images, plain
    folder = directory / "png"
    folder.mkdir(exist_ok=True)
    with open(images, "w") as with_media, open(plain, "w") as without:
        for i in range(cases):
            name = f"png/{i}.png"
            if not (directory / name).exists():
                out = io.BytesIO()
                Image.new("RGB", (16, 16), (i % 256, (i // 256) % 256, (i // 65536) % 256)).save(out, "PNG")
                (directory / name).write_bytes(out.getvalue())
            question = f"What colour is picture {i}?"
            record = {"id": f"c{i}", "candidate": f"colour {i % 7}", "reference": f"colour {i % 5}"}
            with_media.write(json.dumps({**record, "input": [{"type": "text", "text": question},
                                                              {"type": "image_url", "image_url": {"url": name}}]}) + "\n")
            without.write(json.dumps({**record, "input": question}) + "\n")
    return images, plain


def run(data: Path, db: Path) -> tuple[float, float]:
    return timed([str(BIN / "evalyard"), "run", str(data), "-s", "contains", "--db", f"sqlite:///{db}"])


def media_bytes(db: Path) -> int:
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT coalesce(sum(size), 0) FROM media").fetchone()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeat-runs", type=int, default=10)
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "evalyard-bench-media")
    parser.add_argument("--write", action="store_true", help="write the figures into benchmarks/RESULTS.md")
    args = parser.parse_args()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for n in args.cases:
            images, plain = data_files(args.data_dir, n)
            quiet_machine()
            plain_wall, plain_rss = run(plain, Path(scratch) / f"plain_{n}.db")
            quiet_machine()
            media_wall, media_rss = run(images, Path(scratch) / f"media_{n}.db")
            rows.append((n, plain_wall, plain_rss, media_wall, media_rss, media_bytes(Path(scratch) / f"media_{n}.db")))
            print(f"{n} cases: text {plain_wall:.1f}s {plain_rss:.0f} MB; images {media_wall:.1f}s {media_rss:.0f} MB",
                  file=sys.stderr)
        images, _ = data_files(args.data_dir, 1000)
        db = Path(scratch) / "repeat.db"
        repeats = []
        for k in range(args.repeat_runs):
            run(images, db)
            # SQLite keeps a run's new pages in the write-ahead log until a checkpoint: both count
            wal = db.with_name(db.name + "-wal")
            repeats.append((k + 1, media_bytes(db), db.stat().st_size + (wal.stat().st_size if wal.exists() else 0)))
    lines = ["| cases | text only: wall s | peak RSS MB | with an image each: wall s | peak RSS MB | ratio | media bytes stored |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for n, pw, pr, mw, mr, stored in rows:
        lines.append(f"| {n:,} | {pw:.1f} | {pr:.0f} | {mw:.1f} | {mr:.0f} | {mw / pw:.2f}x | {stored:,} |")
    lines += ["", "| run over the same 1,000 image cases | media table bytes | database bytes (file and its WAL) |", "|---:|---:|---:|"]
    lines += [f"| {k} | {stored:,} | {size:,} |" for k, stored, size in repeats]
    text = "\n".join(lines)
    print(text)
    if args.write:
        machine = f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
        write_section("Images in cases", f"## Images in cases\n\n{date.today()}, {machine}. Command: "
                      "`.venv/bin/python benchmarks/bench_media.py --cases "
                      f"{' '.join(map(str, args.cases))} --repeat-runs {args.repeat_runs} --write`\n\n" + text)


if __name__ == "__main__":
    main()
