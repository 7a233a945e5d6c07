"""An experiment as users run one: models x prompts x epochs over a suite, every generation a
call to the fake OpenAI server (100 ms latency), against a bare litellm loop making the same
number of calls at the same concurrency; then a kill -9 mid-grid and ``--resume EXPERIMENT``.

    .venv/bin/python benchmarks/bench_grid.py [--cases 2000] [--models 3] [--prompts 2] [--epochs 5]
                                              [--concurrency 64] [--latency-ms 100] [--kill-after 30]

The grid is a suite file's ``matrix:`` (each model its own name at the same server); the scorer
is ``contains`` (no model), so the figure is the platform's cost of generating, storing and
reducing trials. The ideal time is calls x latency / concurrency. ``--kill-after S`` also kills
a second grid S seconds in, resumes it, and checks every (cell, case, epoch) output and every
trial exists exactly once and no cell's run was made twice.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

PROMPTS = {"terse": "Answer in one word: {{ input }}", "explain": "Answer, then explain briefly: {{ input }}"}


def start_server(latency_ms: float) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, "-m", "evalyard.testing.fake_openai", "--port", "0",
                                "--latency-ms", str(latency_ms), "--reply", "yes"], stdout=subprocess.PIPE, text=True)
    return process, process.stdout.readline().split()[-1]


def write_suite(work: Path, args: argparse.Namespace, api_base: str) -> Path:
    with open(work / "cases.jsonl", "w", encoding="utf-8") as handle:
        for i in range(args.cases):
            handle.write(json.dumps({"id": f"c{i}", "input": f"Is {i} a number? ({i})", "reference": "yes"}) + "\n")
    prompts = work / "prompts"
    prompts.mkdir(exist_ok=True)
    names = list(PROMPTS)[:args.prompts]
    for name in names:
        (prompts / f"{name}.jinja").write_text(f"---\nfields: [input]\nanswer: text\n---\n{PROMPTS[name]}\n",
                                              encoding="utf-8")
    models = [f"openai/fake-{n}" for n in range(args.models)]
    lines = ["name: grid-bench", "data: cases.jsonl", "prompts: prompts", "scorers: [contains]", "models:"]
    lines += [f"  {m}: {{api_base: '{api_base}'}}" for m in models]
    lines += ["matrix:", f"  models: [{', '.join(models)}]", f"  prompts: [{', '.join(names)}]",
              f"  epochs: {args.epochs}"]
    path = work / "grid.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


async def bare(api_base: str, calls: int, concurrency: int) -> float:
    from evalyard.models.providers import load_litellm

    litellm = load_litellm()
    semaphore = asyncio.Semaphore(concurrency)

    async def one(i: int) -> str:
        async with semaphore:
            response = await litellm.acompletion(model=f"openai/fake-{i % 3}", api_base=api_base, api_key="no-key",
                                                 num_retries=0, max_retries=0, temperature=0,
                                                 messages=[{"role": "user", "content": f"Answer in one word: {i}"}])
            return response.choices[0].message.content

    started = time.perf_counter()
    answers = await asyncio.gather(*(one(i) for i in range(calls)))
    assert len(answers) == calls
    return time.perf_counter() - started


def evalyard(work: Path, suite: Path, home: Path, concurrency: int, *extra: str,
             kill_after: float | None = None) -> tuple[float, subprocess.CompletedProcess | None]:
    env = dict(os.environ, EVALYARD_HOME=str(home))
    exe = Path(sys.executable).parent / "evalyard"
    command = [str(exe), "run", str(suite), "-j", str(concurrency), "--json", *extra]
    started = time.perf_counter()
    if kill_after is None:
        done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=work)
        assert done.returncode == 0, (done.returncode, done.stderr[-2000:], done.stdout[-2000:])
        return time.perf_counter() - started, done
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)
    time.sleep(kill_after)  # a benchmark's kill at a wall-clock moment, not a test's wait
    assert process.poll() is None, "the grid finished before the kill: raise --cases"
    process.kill()
    process.wait()
    return time.perf_counter() - started, None


def counts(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as con:
        return {table: con.execute(f"select count(*) from {table}").fetchone()[0]
                for table in ("runs", "experiment_runs", "trial_outputs", "trials", "results", "model_calls")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--models", type=int, default=3)
    parser.add_argument("--prompts", type=int, default=2, choices=(1, 2))
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--kill-after", type=float, default=None)
    args = parser.parse_args()
    cells = args.models * args.prompts
    calls = cells * args.cases * args.epochs
    ideal = calls * args.latency_ms / 1000 / args.concurrency
    server, api_base = start_server(args.latency_ms)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            suite = write_suite(work, args, api_base)
            bare_s = asyncio.run(bare(api_base, calls, args.concurrency))
            ours_s, done = evalyard(work, suite, work / "home", args.concurrency)
            peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            data = json.loads(done.stdout)
            found = counts(work / "home" / "evalyard.db")
            assert found["trial_outputs"] == calls and found["results"] == cells * args.cases, found
            print(f"{cells} cells x {args.cases} cases x {args.epochs} epochs = {calls} generations, latency "
                  f"{args.latency_ms:g} ms, -j {args.concurrency}; ideal {ideal:.1f} s; load average "
                  f"{os.getloadavg()[0]:.1f}")
            print(f"bare litellm acompletion + Semaphore  {bare_s:7.1f} s  {bare_s / ideal:.2f}x ideal")
            print(f"evalyard run (grid, epochs)           {ours_s:7.1f} s  {ours_s / bare_s:.2f}x bare, "
                  f"peak RSS {peak_mb:.0f} MB, {len(data['cells'])} cells, "
                  f"{sum(c['usage']['calls'] for c in data['cells'] if c.get('usage'))} calls")
            if args.kill_after is not None:
                home = work / "killed"
                evalyard(work, suite, home, args.concurrency, kill_after=args.kill_after)
                db = home / "evalyard.db"
                at_kill = counts(db)
                with sqlite3.connect(db) as con:
                    experiment = con.execute("select id from experiments").fetchone()[0]
                resumed_s, _ = evalyard(work, suite, home, args.concurrency, "--resume", experiment)
                after = counts(db)
                assert after["trial_outputs"] == calls and after["trials"] == calls, after
                assert after["results"] == cells * args.cases and after["runs"] == cells == after["experiment_runs"]
                with sqlite3.connect(db) as con:
                    twice = con.execute("select count(*) from (select run_id, case_id, epoch, count(*) n "
                                        "from trial_outputs group by 1, 2, 3 having n > 1)").fetchone()[0]
                assert twice == 0
                print(f"killed after {args.kill_after:g} s with {at_kill['trial_outputs']} outputs and "
                      f"{at_kill['results']} results stored; --resume EXPERIMENT took {resumed_s:.1f} s; after it "
                      f"{after['trial_outputs']} outputs, {after['trials']} trials, {after['results']} results, "
                      f"{after['runs']} runs: every one once")
    finally:
        server.terminate()
        server.wait(5)


if __name__ == "__main__":
    main()
