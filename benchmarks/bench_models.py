"""Model-layer overhead: 1,000 judge calls against the fake OpenAI server (100 ms latency),
concurrency 16, side by side with a bare litellm ``acompletion`` loop under
``asyncio.Semaphore(16)`` sending the very same messages (the judge template rendered for
each case); then the same judged cases again from the cache.

    .venv/bin/python benchmarks/bench_models.py [--calls 1000] [--latency-ms 100] [--concurrency 16] [--rounds 3]

Rounds alternate bare and evalyard (each evalyard round on fresh cases, so every call is a
cache miss) and medians are compared, so drift in the machine's speed hits both sides alike.
The server runs in its own process so it does not share the GIL with the client.
The ideal time is calls x latency / concurrency (6.25 s for the defaults).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

MODEL = "openai/fake-judge"


def start_server(latency_ms: float) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, "-m", "evalyard.testing.fake_openai", "--port", "0",
                                "--latency-ms", str(latency_ms)], stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    return process, line.split()[-1]


def cases(n: int, start: int = 0) -> list:
    from evalyard import Case

    return [Case(id=str(i), input=f"What is {i} plus {i}?", candidate=str(2 * i), reference=f"{2 * i}")
            for i in range(start, start + n)]


def judge():
    from evalyard.prompting import register_prompt_scorer

    return register_prompt_scorer("bench_correctness", template="correctness", model=MODEL, reasoning=False)()


async def bare_litellm(api_base: str, n: int, concurrency: int, start: int = 0) -> float:
    """The same messages the judge sends, straight to litellm (rendered before the clock starts)."""
    from evalyard.models.providers import load_litellm

    litellm = load_litellm()
    template = judge().prompt_template()
    prompts = [template.render(case, reasoning=False).messages for case in cases(n, start)]
    semaphore = asyncio.Semaphore(concurrency)

    async def one(messages: list) -> str:
        async with semaphore:
            response = await litellm.acompletion(
                model=MODEL, api_base=api_base, api_key="no-key", num_retries=0, max_retries=0, temperature=0,
                messages=messages)
            return response.choices[0].message.content

    started = time.perf_counter()
    answers = await asyncio.gather(*(one(m) for m in prompts))
    assert len(answers) == n
    return time.perf_counter() - started


async def evalyard_scorer(layer, n: int, start: int = 0) -> tuple[float, list]:
    from evalyard.testing import score_cases

    scorer = judge()
    scorer.models = layer
    started = time.perf_counter()
    scores = await score_cases(scorer, cases(n, start))
    return time.perf_counter() - started, scores


def sqlite_pragmas(connection, _record) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


async def main(args: argparse.Namespace) -> None:
    from sqlalchemy import create_engine, event
    from sqlmodel import SQLModel

    from evalyard.models import ModelSettings, SQLCache
    from evalyard.store.models import ModelCallRow

    import statistics

    server, api_base = start_server(args.latency_ms)
    bare_times, our_times, cached_times = [], [], []
    try:
        await bare_litellm(api_base, 32, args.concurrency, start=10**6)  # warm both paths: imports, first calls
        ideal = args.calls * args.latency_ms / 1000 / args.concurrency
        with tempfile.TemporaryDirectory() as tmp:
            engine = create_engine(f"sqlite:///{Path(tmp) / 'bench.db'}")
            event.listen(engine, "connect", sqlite_pragmas)  # as the store opens its database
            SQLModel.metadata.create_all(engine, tables=[ModelCallRow.__table__])
            from evalyard import Application

            layer = Application().model_layer(cache=SQLCache(engine), concurrency=args.concurrency,
                               settings={MODEL: ModelSettings(api_base=api_base)})
            await evalyard_scorer(layer, 32, start=2 * 10**6)
            for round_no in range(args.rounds):
                start = round_no * args.calls
                bare_times.append(await bare_litellm(api_base, args.calls, args.concurrency, start=start))
                before = layer.usage.requests
                ours, scores = await evalyard_scorer(layer, args.calls, start=start)
                our_times.append(ours)
                errors = sum(1 for s in scores if s.error)
                assert errors == 0 and layer.usage.requests - before == args.calls, "every call a fresh request"
                cached, again = await evalyard_scorer(layer, args.calls, start=start)
                assert sum(s.usage["cache_hits"] for s in again) == args.calls
                cached_times.append(cached)
                print(f"round {round_no + 1}: bare {bare_times[-1]:.2f} s, evalyard {ours:.2f} s, cached {cached:.2f} s")
    finally:
        server.terminate()
        server.wait(5)
    bare, ours, cached = (statistics.median(t) for t in (bare_times, our_times, cached_times))
    print(f"calls {args.calls}, latency {args.latency_ms:g} ms, concurrency {args.concurrency}; ideal {ideal:.2f} s; "
          f"medians of {args.rounds} alternating rounds, load average {os.getloadavg()[0]:.1f}")
    print(f"bare litellm acompletion + Semaphore     {bare:6.2f} s   {bare / ideal:.3f}x ideal")
    print(f"evalyard PromptScorer (SQL cache, miss)   {ours:6.2f} s   {ours / bare:.3f}x bare, {ours / ideal:.3f}x ideal")
    print(f"evalyard cached rerun                     {cached:6.2f} s")


def judged_run_memory(n: int) -> None:
    """Peak memory of a whole ``evalyard run`` judging ``n`` cases (scripted judge, so the figure is the
    platform's: litellm, the model layer, the cache and the store, without a provider's latency)."""
    import json
    import resource

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "prompts").mkdir()
        (work / "prompts" / "judge.jinja").write_text(
            "---\nfields: [input, candidate, reference]\nanswer: binary\nscorer: {name: judge}\n---\n"
            "Does {{ candidate }} answer {{ input }} as {{ reference }} does?\n", encoding="utf-8")
        (work / "rules.yaml").write_text('- content: "ANSWER: yes"\n', encoding="utf-8")
        with open(work / "cases.jsonl", "w", encoding="utf-8") as handle:
            for case in cases(n):
                handle.write(json.dumps(case.to_dict()) + "\n")
        env = dict(os.environ, EVALYARD_HOME=str(work / "home"))
        exe = Path(sys.executable).parent / "evalyard"
        started = time.perf_counter()
        done = subprocess.run([str(exe), "run", str(work / "cases.jsonl"), "-s", "judge", "--prompts-dir",
                               str(work / "prompts"), "--judge-model", f"scripted/{work / 'rules.yaml'}", "-j", "16",
                               "--json"], env=env, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        assert data["scorers"]["judge"]["count"] == n and data["scorers"]["judge"]["errors"] == 0
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"judged run of {n} cases (scripted judge, -j 16): {elapsed:.1f} s, peak RSS {peak_mb:.0f} MB, "
          f"{data['usage']['calls']} model calls")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--memory-cases", type=int, default=0,
                        help="instead: peak memory of an `evalyard run` judging this many cases")
    arguments = parser.parse_args()
    if arguments.memory_cases:
        judged_run_memory(arguments.memory_cases)
    else:
        asyncio.run(main(arguments))
