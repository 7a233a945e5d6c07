"""Model-layer overhead: 1,000 judge calls against the fake OpenAI server (100 ms latency),
concurrency 16, side by side with a bare litellm ``acompletion`` loop under
``asyncio.Semaphore(16)``; then the same judged cases again from the cache.

    .venv/bin/python benchmarks/bench_models.py [--calls 1000] [--latency-ms 100] [--concurrency 16]

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


def cases(n: int) -> list:
    from evalyard import Case

    return [Case(id=str(i), input=f"What is {i} plus {i}?", candidate=str(2 * i), reference=f"{2 * i}")
            for i in range(n)]


async def bare_litellm(api_base: str, n: int, concurrency: int) -> float:
    from evalyard.models.providers import load_litellm

    litellm = load_litellm()
    semaphore = asyncio.Semaphore(concurrency)

    async def one(i: int) -> str:
        async with semaphore:
            response = await litellm.acompletion(
                model=MODEL, api_base=api_base, api_key="no-key", num_retries=0, max_retries=0, temperature=0,
                messages=[{"role": "user", "content": f"Is {2 * i} the sum of {i} and {i}? Reply yes or no."}])
            return response.choices[0].message.content

    started = time.perf_counter()
    answers = await asyncio.gather(*(one(i) for i in range(n)))
    assert len(answers) == n
    return time.perf_counter() - started


async def evalyard_scorer(layer, n: int) -> tuple[float, list]:
    from evalyard.prompting import register_prompt_scorer

    scorer = register_prompt_scorer("bench_correctness", template="correctness", model=MODEL, reasoning=False)()
    scorer.models = layer
    started = time.perf_counter()
    scores = await scorer.ascore_batch(cases(n))
    return time.perf_counter() - started, scores


def sqlite_pragmas(connection, _record) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


async def main(args: argparse.Namespace) -> None:
    from sqlalchemy import create_engine, event
    from sqlmodel import SQLModel

    from evalyard.models import ModelLayer, ModelSettings, SQLCache
    from evalyard.store.models import ModelCallRow

    server, api_base = start_server(args.latency_ms)
    try:
        await bare_litellm(api_base, 32, args.concurrency)  # warm both paths: imports, first-call set-up
        ideal = args.calls * args.latency_ms / 1000 / args.concurrency
        bare = await bare_litellm(api_base, args.calls, args.concurrency)
        with tempfile.TemporaryDirectory() as tmp:
            engine = create_engine(f"sqlite:///{Path(tmp) / 'bench.db'}")
            event.listen(engine, "connect", sqlite_pragmas)  # as the store opens its database
            SQLModel.metadata.create_all(engine, tables=[ModelCallRow.__table__])
            layer = ModelLayer(cache=SQLCache(engine), concurrency=args.concurrency,
                               settings={MODEL: ModelSettings(api_base=api_base)})
            ours, scores = await evalyard_scorer(layer, args.calls)
            errors = sum(1 for s in scores if s.error)
            requests = layer.usage.requests
            cached, again = await evalyard_scorer(layer, args.calls)
            hits = sum(s.usage["cache_hits"] for s in again)
    finally:
        server.terminate()
        server.wait(5)
    print(f"calls {args.calls}, latency {args.latency_ms:g} ms, concurrency {args.concurrency}; ideal {ideal:.2f} s")
    print(f"bare litellm acompletion + Semaphore     {bare:6.2f} s")
    print(f"evalyard PromptScorer (SQL cache, miss)   {ours:6.2f} s   {ours / bare:.3f}x bare, "
          f"{ours / ideal:.3f}x ideal; {requests} requests, {errors} errors")
    print(f"evalyard cached rerun                     {cached:6.2f} s   {hits} cache hits")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--concurrency", type=int, default=16)
    asyncio.run(main(parser.parse_args()))
