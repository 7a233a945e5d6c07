"""Conversation suites at scale: N agent conversations scored by the tool-call scorers.

Run (from the repository root; about a minute at 100,000; alone on the machine):

    .venv/bin/python benchmarks/bench_conversations.py --cases 10000 100000 [--write]

The workload: a generated JSONL file (seeded) of conversations in the OpenAI chat format, each a
system prompt, 1-3 user turns, 1-4 tool calls with JSON arguments and their results, the
assistant's answers, three tool schemas and the expected calls (about 2 KB a conversation, 10x a
single-answer case of ``bench_scale.py``). ``evalyard run`` reads it into a new SQLite file and
scores it with ``agent/tool_calls`` (unordered, JSON-Schema check) and ``agent/trajectory_match``,
as its own process under ``/usr/bin/time`` (wall time and peak RSS); then ``runs export`` of the
run. Memory should not grow with N: 10,000 and 100,000 give the same peak when it is flat.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sqlite3
import sys
import tempfile
from datetime import date
from pathlib import Path

from bench_scale import BIN, timed  # benchmarks/ is on sys.path when run as a script
from results_file import write_section

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
        "required": ["city"]}}},
    {"type": "function", "function": {"name": "search_flights", "parameters": {
        "type": "object", "properties": {"origin": {"type": "string"}, "destination": {"type": "string"},
                                         "date": {"type": "string"}}, "required": ["origin", "destination"]}}},
    {"type": "function", "function": {"name": "book_flight", "parameters": {
        "type": "object", "properties": {"flight": {"type": "string"}, "passengers": {"type": "integer"}},
        "required": ["flight", "passengers"]}}},
]
CITIES = ["Oslo", "Rome", "Paris", "Lima", "Kyoto", "Accra", "Perth", "Quito"]


def call(rng: random.Random) -> tuple[str, dict]:
    kind = rng.randrange(3)
    if kind == 0:
        return "get_weather", {"city": rng.choice(CITIES), "unit": rng.choice("cf")}
    if kind == 1:
        return "search_flights", {"origin": rng.choice(CITIES), "destination": rng.choice(CITIES),
                                  "date": f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"}
    return "book_flight", {"flight": f"XY{rng.randint(100, 999)}", "passengers": rng.randint(1, 4)}


def conversation(i: int, rng: random.Random) -> dict:
    messages = [{"role": "system", "content": "You are a travel assistant. Use the tools when they help."}]
    expected = []
    for turn in range(rng.randint(1, 3)):
        messages.append({"role": "user", "content": f"Request {turn} of traveller {i}: " + " ".join(
            rng.choice(CITIES) for _ in range(12))})
        calls = [call(rng) for _ in range(rng.randint(0, 2))]
        if calls:
            ids = [f"c{i}-{turn}-{n}" for n in range(len(calls))]
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": id_, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                for id_, (name, args) in zip(ids, calls)]})
            messages += [{"role": "tool", "tool_call_id": id_, "content": json.dumps({"ok": True, "n": rng.random()})}
                         for id_ in ids]
            # the reference: mostly the calls made, sometimes one of them with other arguments
            expected += [{"name": n, "arguments": a if rng.random() < 0.8 else call(rng)[1]} for n, a in calls]
        messages.append({"role": "assistant", "content": "Done: " + " ".join(rng.choice(CITIES) for _ in range(15))})
    return {"id": f"conv-{i}", "messages": messages, "tools": TOOLS, "expected_tool_calls": expected}


def data_file(directory: Path, cases: int) -> Path:
    path = directory / f"conversations_{cases}.jsonl"
    if path.exists():
        return path
    rng = random.Random(cases)
    partial = path.with_suffix(".partial")
    with open(partial, "w", encoding="utf-8") as handle:
        for i in range(cases):
            handle.write(json.dumps(conversation(i, rng)) + "\n")
    partial.rename(path)
    return path


def measure(cases: int, data_dir: Path, work: Path) -> dict:
    data = data_file(data_dir, cases)
    db = work / f"conversations_{cases}.db"
    url = f"sqlite:///{db}"
    row = {"cases": cases, "MB": data.stat().st_size / 1e6}
    row["run"] = timed([str(BIN / "evalyard"), "run", str(data), "--name", f"conversations-{cases}", "--db", url,
                        "-s", "agent/tool_calls:mode=unordered,schema=true",
                        "-s", "agent/trajectory_match:mode=superset,tool_args=subset"])
    with sqlite3.connect(db) as connection:
        row["results"], row["errors"] = connection.execute(
            "select count(*), count(error) from results").fetchone()
        row["means"] = dict(connection.execute("select scorer, round(avg(value), 4) from results group by scorer"))
    out = work / "export.jsonl"
    row["export"] = timed([str(BIN / "evalyard"), "runs", "export", f"conversations-{cases}", "--format", "jsonl",
                           "-o", str(out), "--db", url])
    out.unlink()
    db.unlink()
    return row


def table(rows: list[dict]) -> str:
    lines = ["| conversations | file | `evalyard run` (2 tool-call scorers) | per 1,000 | results (errors) | "
             "`runs export` jsonl |", "|---|---|---|---|---|---|"]
    for r in rows:
        (wall, rss), (ewall, erss) = r["run"], r["export"]
        lines.append(f"| {r['cases']:,} | {r['MB']:.0f} MB | {wall:.1f} s, {rss:.0f} MB | {wall / r['cases'] * 1000:.2f} s "
                     f"| {r['results']:,} ({r['errors']}) | {ewall:.1f} s, {erss:.0f} MB |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "evalyard-bench-data")
    parser.add_argument("--write", action="store_true", help="write the section of benchmarks/RESULTS.md")
    args = parser.parse_args()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="evalyard-conv-") as work:
        for cases in args.cases:
            rows.append(measure(cases, args.data_dir, Path(work)))
            print(json.dumps(rows[-1]), flush=True)
    body = "\n".join([
        "## Conversations at scale (issue 42)", "",
        f"Measured {date.today()} on {platform.machine()}, {platform.python_version()}; each cell one process's "
        "wall time and peak RSS (`/usr/bin/time`). Workload: a generated JSONL file of N agent conversations "
        "(1-3 user turns, 0-2 tool calls a turn with their results, three tool schemas, the expected calls; "
        "about 2 KB each) scored by `agent/tool_calls` (unordered, JSON-Schema check) and "
        "`agent/trajectory_match` (superset, subset arguments) into a new SQLite file.", "",
        f"Command: `.venv/bin/python benchmarks/bench_conversations.py --cases {' '.join(map(str, args.cases))} "
        "--write`", "", table(rows), "",
        "Means: " + "; ".join(f"{r['cases']:,}: " + ", ".join(f"`{k}` {v}" for k, v in sorted(r["means"].items()))
                              for r in rows) + "."])
    if args.write:
        print(f"wrote {write_section('Conversations at scale (issue 42)', body)}")
    else:
        print(body)


if __name__ == "__main__":
    sys.exit(main())
