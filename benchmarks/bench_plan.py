"""How close `evalyard run --plan` comes to the run it plans: calls, cache hits, tokens, cost, time.

    # (a) a judged suite on the fake OpenAI server (priced as gpt-4o-mini by litellm's map)
    .venv/bin/python benchmarks/bench_plan.py fake --out /tmp/plan.jsonl [--cases 240] [--latency-ms 100]
    # (b) 20 cases judged by the local model (CPU heavy: run it alone)
    .venv/bin/python benchmarks/bench_plan.py local --out /tmp/plan.jsonl [--cases 20]
    # the RESULTS.md section from the rows
    .venv/bin/python benchmarks/bench_plan.py report /tmp/plan.jsonl

Every plan and run is the CLI in its own process (`evalyard run SUITE ... --plan --json`, then the
same command without `--plan`), on a database of the benchmark's own, so the plan reads exactly
what the run then finds. `fake`: a history run on 40 other cases first (the plan learns latency,
answer length and how the server counts tokens from it), then (1) a suite of new cases, planned
and run, and (2) a suite sharing half its cases with (1), so half of its calls are cache hits.
`local`: a fresh database, no history: the plan times one of its requests on the local engine.
Actual figures are the run's own usage (`run --json`: calls, cache hits, tokens, cost) and its
duration; the plan's time includes the start-up it foresees (importing litellm, loading a model).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import write_section

HERE = Path(__file__).resolve().parent
TOPICS = ["Paris", "the Nile", "photosynthesis", "Mount Everest", "the Moon", "DNA", "Mozart", "copper"]


def cases(first: int, n: int) -> list[dict]:
    out = []
    for i in range(first, first + n):
        topic = TOPICS[i % len(TOPICS)]
        wrong = i % 3 == 0
        out.append({"id": f"c{i}", "input": f"Question {i}: when was {topic} first described?",
                    "reference": f"{topic} was first described in {1500 + i}.",
                    "candidate": f"{topic} was first described in {1540 + i if wrong else 1500 + i}"
                                 f"{', as most sources say' if i % 2 else ''}."})
    return out


def write_suite(folder: Path, name: str, rows: list[dict], scorers: list[str], models: dict | None) -> Path:
    import yaml

    data = folder / f"{name}.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    suite = {"name": name, "data": data.name, "scorers": scorers}
    if models:
        suite["models"] = models
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path


def cli(*args: str, env: dict) -> dict:
    command = [sys.executable, "-c", "from evalyard.console import main; main()", *args, "--json"]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode not in (0, 1):
        raise SystemExit(f"evalyard {' '.join(args)} failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)


def measure(label: str, suite: Path, options: list[str], env: dict, db: str) -> dict:
    started = time.perf_counter()
    plan = cli("run", str(suite), *options, "--db", db, "--plan", env=env)["plan"]
    plan_s = time.perf_counter() - started
    run = cli("run", str(suite), *options, "--db", db, env=env)
    usage = run.get("usage") or {}
    t = plan["totals"]
    return {"label": label, "command": f"evalyard run {suite.name} {' '.join(options)} --plan", "plan_s": plan_s,
            "planned": {"calls": t["calls"], "cache_hits": t["cache_hits"], "input_tokens": t["input_tokens"],
                        "output_tokens": t["output_tokens"], "cost": t["cost"], "seconds": t["seconds"]},
            "actual": {"calls": usage.get("calls", 0), "cache_hits": usage.get("cache_hits", 0),
                       "input_tokens": usage.get("prompt_tokens", 0), "output_tokens": usage.get("completion_tokens", 0),
                       "cost": usage.get("cost"), "seconds": run["duration_s"]},
            "bases": [f"{line['name']} / {m['model']}: tokens in: {m['input_basis']}; out: {m['output_basis']}; "
                      f"time: {m['time_basis']}" for line in plan["lines"] for m in line["models"]]
                     + [f"{line['name']}: {line['time_basis']}" for line in plan["lines"] if not line["models"]],
            "startup": plan["startup"]}


def environment(home: str) -> dict:
    env = dict(os.environ, EVALYARD_HOME=home, FAKE_KEY="sk-fake", LITELLM_LOCAL_MODEL_COST_MAP="True")
    env.pop("EVALYARD_JUDGE_MODEL", None)
    return env


def fake(args: argparse.Namespace) -> list[dict]:
    from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig

    rows = []
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer(FakeServerConfig(latency_ms=args.latency_ms)) as server:
        folder = Path(tmp)
        env = environment(str(folder / "home"))
        db = str(folder / "runs.db")
        models = {args.model: {"api_base": server.base_url, "api_key_env": "FAKE_KEY"}}
        scorers = ["correctness", "conciseness:logprobs=true", "exact_match"]
        options = ["--judge-model", args.model, "-j", str(args.concurrency)]
        history = write_suite(folder, "history", cases(100_000, 40), scorers, models)
        cli("run", str(history), *options, "--db", db, env=env)
        first = write_suite(folder, "fresh", cases(0, args.cases), scorers, models)
        rows.append(measure(f"fake server, {args.cases} new cases", first, options, env, db))
        half = args.cases // 2
        mixed = write_suite(folder, "half-cached", cases(half, args.cases), scorers, models)
        rows.append(measure(f"fake server, {args.cases} cases, {args.cases - half} of them judged before", mixed,
                            options, env, db))
    for row in rows:
        row.update(kind="fake", latency_ms=args.latency_ms, concurrency=args.concurrency, model=args.model)
    return rows


def local(args: argparse.Namespace) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = environment(str(folder / "home"))
        if os.environ.get("EVALYARD_MODELS_DIR"):
            env["EVALYARD_MODELS_DIR"] = os.environ["EVALYARD_MODELS_DIR"]
        suite = write_suite(folder, "local", cases(0, args.cases), ["correctness:logprobs=true"], None)
        options = ["--judge-model", "local/qwen2.5-coder-1.5b", "-j", str(args.concurrency)]
        row = measure(f"local/qwen2.5-coder-1.5b, {args.cases} new cases, no history", suite, options, env,
                      str(folder / "runs.db"))
    row.update(kind="local", concurrency=args.concurrency, model="local/qwen2.5-coder-1.5b")
    return [row]


def error(planned, actual) -> str:
    if planned is None or actual is None:
        return "-"
    if actual == 0:
        return "exact" if planned == 0 else "-"
    e = (planned - actual) / actual
    return "exact" if planned == actual else f"{e:+.1%}"


def fmt(value, what: str) -> str:
    if value is None:
        return "unknown"
    if what == "cost":
        return f"${value:.5f}"
    if what == "seconds":
        return f"{value:.1f}s"
    return str(round(value))


def report(path: str) -> None:
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    lines = ["## Planning a run (--plan)", "",
             "`evalyard run SUITE ... --plan` against the run it plans, on the same database "
             "(`benchmarks/bench_plan.py`). Planned / actual (error of the plan); cost is what the run spent on "
             "calls it made (cache hits cost nothing), time is the run's duration.", ""]
    for row in rows:
        lines += [f"### {row['label']}", "", f"`{row['command']}` (-j {row['concurrency']}"
                  + (f", server latency {row['latency_ms']:g} ms" if row.get("latency_ms") is not None else "")
                  + f"; the plan itself took {row['plan_s']:.1f} s)", "",
                  "| | planned | actual | error |", "|---|---|---|---|"]
        for key in ("calls", "cache_hits", "input_tokens", "output_tokens", "cost", "seconds"):
            p, a = row["planned"][key], row["actual"][key]
            lines.append(f"| {key.replace('_', ' ')} | {fmt(p, key)} | {fmt(a, key)} | {error(p, a)} |")
        lines += ["", "How the plan made its figures:", ""] + [f"- {b}" for b in row["bases"]]
        if row["startup"]:
            lines.append("- start-up: " + ", ".join(f"{s['what']} {s['seconds']:.1f} s" for s in row["startup"]))
        lines.append("")
    lines += ["Commands: `.venv/bin/python benchmarks/bench_plan.py fake --out /tmp/plan.jsonl`, "
              "`.venv/bin/python benchmarks/bench_plan.py local --out /tmp/plan.jsonl` (alone: it loads the "
              "local model), `.venv/bin/python benchmarks/bench_plan.py report /tmp/plan.jsonl`.", "",
              f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs shared with other "
              f"work, load average {os.getloadavg()[0]:.1f} when written, {time.strftime('%Y-%m-%d')}.", ""]
    text = "\n".join(lines)
    print(text)
    write_section("Planning a run (--plan)", text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("fake")
    a.add_argument("--cases", type=int, default=240)
    a.add_argument("--latency-ms", type=float, default=100)
    a.add_argument("--concurrency", type=int, default=4)
    a.add_argument("--model", default="openai/gpt-4o-mini")
    a.add_argument("--out", required=True)
    b = sub.add_parser("local")
    b.add_argument("--cases", type=int, default=20)
    b.add_argument("--concurrency", type=int, default=4)
    b.add_argument("--out", required=True)
    c = sub.add_parser("report")
    c.add_argument("path")
    args = parser.parse_args()
    if args.command == "report":
        report(args.path)
        return
    rows = fake(args) if args.command == "fake" else local(args)
    with open(args.out, "a") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")
            print(json.dumps(row, indent=1))


if __name__ == "__main__":
    main()
