"""Simulated conversations on the local model: N goals, each talked through by a simulated user
against the assistant under test, both played by ``local/qwen2.5-coder-1.5b``, then judged.

Run (from the repository root; tens of minutes on 2 cores; alone on the machine):

    .venv/bin/python benchmarks/bench_simulated.py [--cases 50] [--judge SCORER ...] [--db URL] [--write]

The goals are generated from 25 requests (cooking, travel, code, shopping, health admin...) and
two personas each. ``evalyard run`` generates every conversation with ``agent/simulated_user``
(at most 3 user turns, answers of at most 150 tokens) and scores it with the ``--judge`` scorers
(default: the deterministic ``agent/tool_calls`` turn count only). Every model call is cached in
the database, so a later run with other judges generates nothing again. Prints, and with
``--write`` records in RESULTS.md: wall time, time per conversation, the turns played, how the
conversations ended, and each scorer's verdicts.
"""

from __future__ import annotations

import argparse
import json
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import date
from pathlib import Path

from results_file import write_section  # benchmarks/ is on sys.path when run as a script

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MODEL = "local/qwen2.5-coder-1.5b"
REQUESTS = [
    "get a recipe for a quick vegetarian dinner for two", "find out how to reverse a list in Python",
    "plan a two-day trip to Lisbon on a small budget", "return a pair of shoes that do not fit",
    "understand what a 401 HTTP error means", "choose between a laptop with 8 GB and one with 16 GB of memory",
    "write a polite email asking a landlord to fix the heating", "learn how to make sourdough starter",
    "convert 5 miles to kilometres and know how long that takes to walk", "get a SQL query counting orders per day",
    "find a good stretching routine for a sore back", "understand the difference between a list and a tuple",
    "reschedule a dentist appointment to next week", "pick a name for a small bakery",
    "learn how to water a cactus", "explain to a child why the sky is blue", "fix a bash loop that never ends",
    "get ideas for a ten-year-old's birthday party", "understand compound interest with an example",
    "prepare for a job interview as a junior developer", "learn three phrases in Italian for a restaurant",
    "cancel a gym membership", "set up a weekly budget for groceries", "get a regular expression matching dates",
    "find out how long to boil an egg for a soft yolk"]
PERSONAS = ["a busy parent who writes short messages", "a curious student who asks follow-up questions"]
SYSTEM = "You are a helpful assistant. Keep each answer under 100 words."


def goals_file(directory: Path, cases: int) -> Path:
    path = directory / f"goals_{cases}.jsonl"
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(cases):
            request, persona = REQUESTS[i % len(REQUESTS)], PERSONAS[(i // len(REQUESTS)) % len(PERSONAS)]
            handle.write(json.dumps({"id": f"goal-{i:02d}", "input": request, "metadata": {"persona": persona},
                                     "messages": [{"role": "system", "content": SYSTEM}]}) + "\n")
    return path


def suite_file(directory: Path, data: Path, judges: list[str]) -> Path:
    path = directory / "simulated.yaml"
    scorers = judges or ["agent/tool_calls:mode=ignore,max_turns=3"]
    path.write_text(json.dumps({
        "name": "simulated-local", "data": str(data),
        "generator": {"name": "agent/simulated_user", "model": MODEL, "user_model": MODEL, "max_turns": 3,
                      "max_tokens": 150},
        "scorers": scorers}))  # JSON is YAML
    return path


def echoed_lines(messages: list[dict]) -> int:
    """How many of the simulated user's lines repeat an earlier assistant message word for word:
    the small model's commonest way of breaking role, counted so the verdicts can be read with it."""
    said, count = set(), 0
    for message in messages:
        text = " ".join(str(message.get("content") or "").split())
        if message["role"] == "assistant" and text:
            said.add(text)
        elif message["role"] == "user" and text in said:
            count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=50)
    parser.add_argument("--judge", action="append", default=[], help="a scorer to judge with (repeatable)")
    parser.add_argument("--db", help="the database (default: a new SQLite file in a temporary directory)")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="evalyard-sim-"))
    db = args.db or f"sqlite:///{work / 'runs.db'}"
    suite = suite_file(work, goals_file(work, args.cases), args.judge)
    command = [str(BIN / "evalyard"), "run", str(suite), "--db", db, "--json", "--judge-model", MODEL]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    summary = json.loads(done.stdout)
    with sqlite3.connect(db.removeprefix("sqlite:///")) as connection:
        rows = connection.execute("SELECT details, error, dialogue FROM candidates WHERE run_id = ?",
                                  (summary["run_id"],)).fetchall()
        verdicts = connection.execute("SELECT scorer, label, error IS NOT NULL, count(*) FROM results "
                                      "WHERE run_id = ? GROUP BY 1, 2, 3", (summary["run_id"],)).fetchall()
    details = [json.loads(d) for d, error, _ in rows if d and not error]
    echoes = sum(echoed_lines(json.loads(dialogue)["messages"]) for _, error, dialogue in rows if dialogue and not error)
    turns = Counter(d["user_turns"] for d in details)
    ended = Counter(d["stopped"] for d in details)
    usage = summary["usage"]
    result = {"run_id": summary["run_id"], "wall_s": round(wall, 1), "conversations": len(rows),
              "generation_errors": sum(1 for _, e, _ in rows if e), "per_conversation_s": round(wall / max(1, len(rows)), 1),
              "user_turns": dict(sorted(turns.items())), "ended": dict(ended), "user_lines_echoing_the_assistant": echoes,
              "model_calls": usage["calls"],
              "cache_hits": usage["cache_hits"],
              "verdicts": [{"scorer": s, "label": label, "error": bool(e), "n": n} for s, label, e, n in verdicts],
              "means": {name: s["mean"] for name, s in summary["scorers"].items()}}
    print(json.dumps(result, indent=2))
    if args.write:
        body = "\n".join([
            "## Simulated conversations on the local model (issue 42)", "",
            f"Measured {date.today()} on {platform.machine()}, Python {platform.python_version()}: "
            f"{args.cases} goals, `agent/simulated_user` with `{MODEL}` as both the assistant and the user "
            "(at most 3 user turns, answers of at most 150 tokens), offline.", "",
            f"Command: `.venv/bin/python benchmarks/bench_simulated.py --cases {args.cases} "
            + " ".join(f"--judge {j}" for j in args.judge) + " --write`", "",
            "```json", json.dumps(result, indent=2), "```"])
        write_section("Simulated conversations on the local model (issue 42)", body)


if __name__ == "__main__":
    sys.exit(main())
