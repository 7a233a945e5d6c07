"""Local models: per-call latency and tokens/s of smollm2-135m and qwen2.5-coder-1.5b on judge
prompts, and what litellm + evalyard's model layer add over calling xllamacpp directly.

    .venv/bin/python benchmarks/bench_local.py [--smol-calls 24] [--qwen-calls 8] [--no-write]

The prompts are the built-in `correctness` judge template rendered over distinct cases, asked
as a judge scorer with logprobs asks (reasoning off, top-10 logprobs, a few answer tokens).
Both sides use the same loaded llama.cpp server and send the same request; llama.cpp's
prompt cache is off on both (`cache_prompt: false`), so every call evaluates its whole prompt,
and evalyard's response cache is bypassed (`no_cache`). Calls alternate direct/layer, then
layer/direct for the next prompt, so drift in the machine's speed hits both sides alike.
Overhead = (sum of layer latencies - sum of direct latencies) / sum of direct latencies.
qwen2.5-coder-1.5b is skipped with a note when it is not installed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

MAX_TOKENS = 4
TOP_LOGPROBS = 10


def judge_prompts(n: int) -> list[list[dict]]:
    from evalyard import Case
    from evalyard.prompting.library import PromptLibrary

    template = PromptLibrary().get("correctness")
    topics = ["Paris", "the Nile", "photosynthesis", "Mount Everest", "the Moon", "DNA", "Mozart", "copper"]
    prompts = []
    for i in range(n):
        topic = topics[i % len(topics)]
        case = Case(id=str(i), input=f"Question {i}: tell me two facts about {topic}, briefly and precisely.",
                    candidate=f"{topic} is well known; fact {i} is that it was first described in {1500 + i}. "
                              f"Another fact is that about {i * 37 % 1000} studies discuss it each year.",
                    reference=f"{topic} was first described in {1500 + i}, and roughly {i * 37 % 1000} "
                              "studies a year are published about it.")
        prompts.append(template.render(case, reasoning=False).messages)
    return prompts


def measure(model: str, n: int) -> dict:
    import evalyard_local.plugin  # noqa: F401  (registers the local/ provider)
    from evalyard.models import ModelSettings
    from evalyard_local.plugin import ENGINE
    from evalyard_local.provider import build_request

    params = {"temperature": 0.0, "max_tokens": MAX_TOKENS, "cache_prompt": False}
    from evalyard import Application

    layer = Application().model_layer(settings={model: ModelSettings(concurrency=1, supports_logprobs=True)})
    prompts = judge_prompts(n + 1)
    started = time.perf_counter()
    layer.complete_sync(model, prompts[-1], params=params, logprobs=TOP_LOGPROBS, no_cache=True)  # loads it
    load_s = time.perf_counter() - started
    loaded = ENGINE.loaded()[model.removeprefix("local/")]
    direct, through, inside, prompt_tps, gen_tps, prompt_tokens = [], [], [], [], [], []

    def call_direct(messages: list[dict]) -> None:
        request, _ = build_request(model, messages, {**params, "logprobs": True, "top_logprobs": TOP_LOGPROBS})
        t = time.perf_counter()
        result = loaded.chat(request)
        direct.append(time.perf_counter() - t)
        timings = result["timings"]
        prompt_tps.append(timings["prompt_per_second"])
        gen_tps.append(timings["predicted_per_second"])
        prompt_tokens.append(result["usage"]["prompt_tokens"])

    def call_layer(messages: list[dict]) -> None:
        busy = loaded.busy_s
        t = time.perf_counter()
        completion = layer.complete_sync(model, messages, params=params, logprobs=TOP_LOGPROBS, no_cache=True)
        through.append(time.perf_counter() - t)
        inside.append(loaded.busy_s - busy)
        assert completion.top_logprobs(), "no logprobs came back"

    for i, messages in enumerate(prompts[:n]):
        first, second = (call_direct, call_layer) if i % 2 == 0 else (call_layer, call_direct)
        first(messages)
        second(messages)
    return {"model": model, "calls": n, "load_s": load_s, "prompt_tokens": statistics.median(prompt_tokens),
            "direct_ms": statistics.median(direct) * 1000, "layer_ms": statistics.median(through) * 1000,
            "prompt_tps": statistics.median(prompt_tps), "gen_tps": statistics.median(gen_tps),
            "overhead": (sum(through) - sum(direct)) / sum(direct),
            "overhead_ms": (sum(through) - sum(direct)) / n * 1000,
            "paired": (sum(through) - sum(inside)) / sum(direct),
            "paired_ms": statistics.median(t - i for t, i in zip(through, inside)) * 1000}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smol-calls", type=int, default=24)
    parser.add_argument("--qwen-calls", type=int, default=8)
    parser.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    args = parser.parse_args()
    from evalyard_local.catalogue import QWEN_CODER_15B
    from evalyard_local.engine import LoadSettings, threads_for_load
    from evalyard_local.files import located

    rows = [measure("local/smollm2-135m", args.smol_calls)]
    notes = []
    if args.qwen_calls and located(QWEN_CODER_15B) is not None:
        rows.append(measure("local/qwen2.5-coder-1.5b", args.qwen_calls))
    elif args.qwen_calls:
        notes.append("qwen2.5-coder-1.5b is not installed (`evalyard models install qwen2.5-coder-1.5b`): skipped.")
    load = os.getloadavg()
    threads = LoadSettings.resolve().n_threads or threads_for_load()
    lines = ["## Local models", "",
             f"`{' '.join(['.venv/bin/python', 'benchmarks/bench_local.py', *sys.argv[1:]])}` — judge prompts "
             f"(the `correctness` template, reasoning off, top-{TOP_LOGPROBS} logprobs, {MAX_TOKENS} answer "
             f"tokens), {threads} threads, llama.cpp's prompt cache off, direct and layer calls alternating on "
             f"the same loaded model; load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} during the run "
             "(2 cores, shared).", "",
             "| model | calls | load | prompt tokens | latency direct | latency via litellm + layer | "
             "prompt tok/s | answer tok/s | overhead, side by side | overhead, within each call |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| `{r['model']}` | {r['calls']} | {r['load_s']:.1f} s | {r['prompt_tokens']:.0f} | "
                     f"{r['direct_ms']:.0f} ms | {r['layer_ms']:.0f} ms | {r['prompt_tps']:.0f} | {r['gen_tps']:.0f} | "
                     f"{r['overhead'] * 100:+.1f}% ({r['overhead_ms']:+.1f} ms/call) | "
                     f"{r['paired'] * 100:+.2f}% ({r['paired_ms']:.1f} ms/call) |")
    lines += ["", "Latencies are medians. Target: overhead at most +5%. *Side by side*: summed layer latencies "
              "against summed direct latencies, alternating calls; on a shared machine this carries the noise of "
              "two different calls. *Within each call*: the layer call's latency minus the time the same call "
              "spent inside llama.cpp (the engine's busy time), summed, over the summed direct latencies; the "
              "ms figure is its median per call. The load column is the first call: reading the GGUF file, "
              "starting llama.cpp and one judge call."]
    lines += notes
    body = "\n".join(lines) + "\n"
    print(body)
    if not args.no_write:
        from results_file import write_section

        print(f"written to {write_section('Local models', body)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
