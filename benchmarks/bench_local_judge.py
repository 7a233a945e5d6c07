"""The local judge's throughput: a judged suite with local/qwen2.5-coder-1.5b, cases/s against the
floor set by llama.cpp's own speed on the part of each prompt it cannot reuse.

    # one measurement (a row), appended to a JSON-lines file; run it with each tree's venv
    PYTHON benchmarks/bench_local_judge.py run --label after --out /tmp/judge.jsonl [--cases 200]
        [--judge pyes|reasoning] [--layout builtin|static-first] [--parallel 1] [--threads N] [--floor-cases 30]
    # P(yes) with and without prefix reuse on the same loaded model, case by case
    PYTHON benchmarks/bench_local_judge.py exactness --cases 20 --out /tmp/judge.jsonl
    # cold prompt processing, llama.cpp's default kernels against the batch-invariant ones, in turn
    PYTHON benchmarks/bench_local_judge.py kernels --cases 10 --out /tmp/judge.jsonl
    # the RESULTS.md section from the rows
    .venv/bin/python benchmarks/bench_local_judge.py report /tmp/judge.jsonl

`run` scores distinct synthetic question/reference/response cases through `evalyard.evaluate`
(fresh database, so no response-cache hits) with a binary judge: `pyes` reads P(yes) from the
first token (logprobs, max_tokens 1), `reasoning` lets the judge reason first (max_tokens 160).
`builtin` is the measured tree's built-in `correctness` template (before the layout change: the case's
data before the grading instructions; after it: the static part first, the question restated after the data);
`static-first` is the same wording with the instructions first, the layout prompts are moving to.
The model is loaded before the clock starts. Afterwards `--floor-cases` prompts of the same shape (new
cases: llama.cpp keeps recent prompts in host memory) go to the loaded llama.cpp server directly,
one after the other, and its own timings (prompt + answer ms) give the floor: what the runtime
needs for the tokens it really evaluates, with no evalyard around it.
Run with the venv of the tree to measure: a checkout of the commit before the change for "before"
(with `EVALYARD_MODELS_DIR` pointing at the installed models), this tree's for "after".
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

MODEL = "local/qwen2.5-coder-1.5b"
TOPICS = ["Paris", "the Nile", "photosynthesis", "Mount Everest", "the Moon", "DNA", "Mozart", "copper",
          "the Roman Empire", "penicillin", "Jupiter", "the printing press"]

# The built-in correctness template's wording, static part first (what issue 27 item 2 plans).
STATIC_FIRST = """---
description: Does the response agree with the reference answer on every fact that matters?
fields: [input, candidate, reference]
answer: binary
system: You check answers against a reference answer. You judge facts, not style.
---
A question was put to an AI assistant. Compare its response with the reference answer.

Say yes when the response states the same facts as the reference on everything the question asks, and states nothing that contradicts it. Extra correct detail, different wording and a different order are fine. Say no when a fact the question asks for is wrong, missing or contradicted, or when the response refuses or avoids the question.

Question:
{{ input }}

Reference answer:
{{ reference }}

Response:
{{ candidate }}

Does the response state the same facts as the reference answer?
"""


def cases(n: int, first: int = 0) -> list[dict]:
    out = []
    for i in range(first, first + n):
        topic = TOPICS[i % len(TOPICS)]
        year, studies = 1500 + i, i * 37 % 1000
        wrong = i % 3 == 0  # a third of the responses get the year wrong
        out.append({"id": f"c{i}", "input": f"Question {i}: when was {topic} first described, and how many "
                                             "studies discuss it each year?",
                    "reference": f"{topic} was first described in {year}; roughly {studies} studies a year "
                                 "discuss it.",
                    "candidate": f"{topic} was first described in {year + 40 if wrong else year}. About {studies} "
                                 f"studies are published on it every year{', mostly in Europe' if i % 2 else ''}."})
    return out


def judge(kind: str, layout: str):
    from evalyard import register_prompt_scorer

    template = "correctness" if layout == "builtin" else STATIC_FIRST
    options = ({"logprobs": True, "max_tokens": 1} if kind == "pyes" else {"reasoning": True, "max_tokens": 160})
    return register_prompt_scorer(f"bench_{kind}_{layout.replace('-', '_')}", template=template,
                                  model=MODEL, temperature=0.0,
                                  **options)


def loaded_model():
    from evalyard_local.plugin import ENGINE

    return ENGINE.loaded()[MODEL.removeprefix("local/")]


def warm_up() -> float:
    """Load the model (and llama.cpp's first-call set-up) with a prompt that shares nothing with the cases."""
    import evalyard_local.plugin  # noqa: F401  (registers the local/ provider)

    started = time.perf_counter()
    from evalyard import Application

    layer = Application().model_layer()
    layer.complete_sync(MODEL, [{"role": "user", "content": "Say hi."}], params={"max_tokens": 1}, no_cache=True)
    layer.close()
    return time.perf_counter() - started


def rendered(scorer_cls, data: list[dict]) -> list[list[dict]]:
    from evalyard import Case

    scorer = scorer_cls()
    template = scorer.prompt_template()
    reasoning = scorer.config.reasoning and not scorer.config.logprobs
    return [template.render(Case(**c), reasoning=reasoning).messages for c in data]


def direct_floor(prompts: list[list[dict]], params: dict) -> dict:
    """The same prompts straight to the loaded server, in order: its own timings."""
    loaded = loaded_model()
    prompt_ms = answer_ms = evaluated = total = 0.0
    started = time.perf_counter()
    for messages in prompts:
        result = loaded.chat({**params, "messages": messages})
        timings, usage = result["timings"], result["usage"]
        prompt_ms += timings["prompt_ms"]
        answer_ms += timings["predicted_ms"]
        evaluated += timings["prompt_n"]
        total += usage["prompt_tokens"]
    wall = time.perf_counter() - started
    return {"floor_cases_s": len(prompts) / ((prompt_ms + answer_ms) / 1000), "direct_cases_s": len(prompts) / wall,
            "prompt_tokens": total / len(prompts), "evaluated_tokens": evaluated / len(prompts),
            "prompt_tps": evaluated / (prompt_ms / 1000), "answer_ms": answer_ms / len(prompts)}


def run(args: argparse.Namespace) -> dict:
    if args.parallel:
        os.environ["EVALYARD_LOCAL_PARALLEL"] = str(args.parallel)
    if args.threads:
        os.environ["EVALYARD_LOCAL_THREADS"] = str(args.threads)
    home = tempfile.mkdtemp(prefix="bench-local-judge-")
    os.environ["EVALYARD_HOME"] = home
    import evalyard
    import evalyard_local

    load_s = warm_up()
    data = cases(args.cases)
    scorer_cls = judge(args.judge, args.layout)
    before = os.getloadavg()
    started = time.perf_counter()
    # A call timeout far above a loaded machine's latency: a timed-out call is retried while
    # llama.cpp still computes the first one, which would measure the retries, not the judge.
    suite = Path(home) / "suite.yaml"
    suite.write_text(json.dumps({"name": "bench-local-judge", "models": {MODEL: {"timeout": 3600}}, "cases": data}))
    result = evalyard.evaluate(str(suite), scorers=[scorer_cls], db=f"sqlite:///{home}/runs.db")
    wall = time.perf_counter() - started
    errors = next(iter(result.scorers.values())).get("errors", 0)
    values = [r["value"] for r in result.results if r.get("value") is not None]
    params = {"temperature": 0.0, "max_tokens": 1 if args.judge == "pyes" else 160, "cache_prompt": True}
    if args.judge == "pyes":
        params.update({"logprobs": True, "top_logprobs": 10})
    engine = loaded_model()
    reused = getattr(engine, "cached_tokens", None), getattr(engine, "prompt_tokens", None)
    # Cases of the same shape the run has not seen: llama.cpp keeps recent prompts in host memory,
    # so the run's own prompts would be found whole.
    floor = direct_floor(rendered(scorer_cls, cases(args.floor_cases, first=args.cases)), params)
    after = os.getloadavg()
    settings = engine.settings
    return {"kind": "run", "label": args.label, "judge": args.judge, "layout": args.layout, "cases": args.cases,
            "parallel": settings.n_parallel, "threads": engine.threads, "load_s": load_s, "wall_s": wall,
            "cases_s": args.cases / wall, "errors": errors,
            "run_reused_share": reused[0] / reused[1] if reused[1] else None, "mean_value": statistics.mean(values) if values else None,
            "tree": str(Path(evalyard_local.__file__).resolve().parents[2]),
            "loadavg": [round(x, 1) for x in before] + [round(x, 1) for x in after], **floor}


def exactness(args: argparse.Namespace) -> dict:
    """P(yes) of each case from a cold call (cache_prompt off) and from a call that reuses the prefix
    cached by the case before it, on the same loaded model."""
    import math

    import evalyard_local
    from evalyard.models import p_yes

    warm_up()
    loaded = loaded_model()
    prompts = rendered(judge("pyes", args.layout), cases(args.cases))
    params = {"temperature": 0.0, "max_tokens": 1, "logprobs": True, "top_logprobs": 10}

    def ask(messages, cache):
        result = loaded.chat({**params, "messages": messages, "cache_prompt": cache})
        choice = result["choices"][0]
        top = {t["token"]: t["logprob"] for t in choice["logprobs"]["content"][0]["top_logprobs"]}
        return choice["message"]["content"], top, result["timings"]["prompt_n"], result["usage"]["prompt_tokens"]

    cold = [ask(m, False) for m in prompts]
    warm = [ask(m, True) for m in prompts]
    identical = sum(c[:2] == w[:2] for c, w in zip(cold, warm))
    diffs = [abs(p_yes(c[1]) - p_yes(w[1])) for c, w in zip(cold, warm)]
    logprob_diffs = [max(abs(c[1][t] - w[1].get(t, -math.inf)) for t in c[1]) for c, w in zip(cold, warm)]
    return {"kind": "exactness", "label": args.label, "layout": args.layout, "cases": args.cases,
            "identical": identical, "answers_equal": sum(c[0] == w[0] for c, w in zip(cold, warm)),
            "max_p_yes_diff": max(diffs), "max_logprob_diff": max(logprob_diffs),
            "reused_tokens": statistics.mean(w[3] - w[2] for w in warm[1:]) if len(warm) > 1 else 0,
            "prompt_tokens": statistics.mean(c[3] for c in cold),
            "tree": str(Path(evalyard_local.__file__).resolve().parents[2]),
            "loadavg": [round(x, 1) for x in os.getloadavg()]}


def kernels(args: argparse.Namespace) -> dict:
    """Cold prompt processing with llama.cpp's default CPU kernels and with the batch-invariant ones
    the engine loads (flash attention and Q4_K repacking off): two servers loaded side by side,
    called in turn on the same judge prompts, so a change of load hits both alike."""
    import xllamacpp

    import evalyard_local

    warm_up()
    engine = loaded_model()
    prompts = rendered(judge("pyes", args.layout), cases(args.cases))

    def server(invariant: bool):
        params = xllamacpp.CommonParams()
        params.model.path = str(engine.path)
        params.n_ctx, params.n_parallel, params.verbosity = 4096, 1, -1
        params.cpuparams.n_threads = params.cpuparams_batch.n_threads = engine.threads
        if invariant:
            params.flash_attn_type, params.no_extra_bufts = 0, True
        return xllamacpp.Server(params)

    servers = {"default": server(False), "batch-invariant": server(True)}
    seconds = {name: 0.0 for name in servers}
    tokens = {name: 0 for name in servers}
    for messages in prompts:
        for name, srv in servers.items():
            timings = srv.handle_chat_completions({"messages": messages, "max_tokens": 1, "temperature": 0.0,
                                                   "cache_prompt": False})["timings"]
            seconds[name] += timings["prompt_ms"] / 1000
            tokens[name] += timings["prompt_n"]
    return {"kind": "kernels", "label": args.label, "cases": args.cases, "threads": engine.settings.n_threads,
            **{f"{name}_tps": tokens[name] / seconds[name] for name in servers},
            "tree": str(Path(evalyard_local.__file__).resolve().parents[2]),
            "loadavg": [round(x, 1) for x in os.getloadavg()]}


def report(paths: list[str], write: bool) -> str:
    rows = [json.loads(line) for path in paths for line in Path(path).read_text().splitlines() if line.strip()]
    runs = [r for r in rows if r["kind"] == "run"]
    checks = [r for r in rows if r["kind"] == "exactness"]
    speeds = [r for r in rows if r["kind"] == "kernels"]
    lines = ["## Local judge", "",
             "`PYTHON benchmarks/bench_local_judge.py run --label L --judge J --layout Y --cases N [--parallel P] "
             "--out rows.jsonl`, with PYTHON the venv of the tree measured (a checkout of the commit before "
             "the change for *before*, this tree's for *after*); `report rows.jsonl` writes this section. "
             f"`{MODEL}` judging synthetic question/reference/response cases; 2 cores shared with other "
             "work (load averages per row, at start / end).", "",
             "| tree | judge | layout | cases | slots | threads | cases/s | prompt tokens reused in the run | "
             "runtime floor cases/s | prompt tokens | evaluated | runtime prompt tok/s | load avg |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        lines.append(f"| {r['label']} | {r['judge']} | {r['layout']} | {r['cases']} | {r['parallel']} | "
                     f"{r['threads']} | {r['cases_s']:.3f} | "
                     f"{'-' if r.get('run_reused_share') is None else format(r['run_reused_share'], '.0%')} | "
                     f"{r['floor_cases_s']:.3f} | {r['prompt_tokens']:.0f} | "
                     f"{r['evaluated_tokens']:.0f} | {r['prompt_tps']:.0f} | "
                     f"{' / '.join(str(x) for x in r['loadavg'][:1] + r['loadavg'][3:4])} |")
    if checks:
        lines += ["", "P(yes) with and without prefix reuse (`exactness --cases N`): each case once cold "
                  "(`cache_prompt: false`) and once after the case before it, on the same loaded model.", "",
                  "| tree | layout | cases | prompt tokens | reused tokens | identical (text + top-10 logprobs) | "
                  "max P(yes) difference | max logprob difference |", "|---|---|---|---|---|---|---|---|"]
        for r in checks:
            lines.append(f"| {r['label']} | {r['layout']} | {r['cases']} | {r['prompt_tokens']:.0f} | "
                         f"{r['reused_tokens']:.0f} | {r['identical']}/{r['cases']} | {r['max_p_yes_diff']:.3g} | "
                         f"{r['max_logprob_diff']:.3g} |")
    if speeds:
        lines += ["", "Cold prompt processing, llama.cpp's default CPU kernels against the batch-invariant ones "
                  "(`kernels --cases N`: two servers side by side, called in turn on the same prompts).", "",
                  "| cases | threads | default prompt tok/s | batch-invariant prompt tok/s | ratio | load avg |",
                  "|---|---|---|---|---|---|"]
        for r in speeds:
            lines.append(f"| {r['cases']} | {r['threads']} | {r['default_tps']:.1f} | {r['batch-invariant_tps']:.1f} | "
                         f"{r['batch-invariant_tps'] / r['default_tps']:.2f} | {r['loadavg'][0]} |")
    body = "\n".join(lines) + "\n"
    if write:
        sys.path.insert(0, str(Path(__file__).parent))
        from results_file import write_section

        write_section("Local judge", body)
    return body


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("run", "exactness", "kernels"):
        p = sub.add_parser(name)
        p.add_argument("--label", default="after")
        p.add_argument("--cases", type=int, default={"run": 200, "exactness": 20, "kernels": 10}[name])
        p.add_argument("--layout", choices=["builtin", "static-first"], default="builtin")
        p.add_argument("--out", required=True)
        if name == "run":
            p.add_argument("--judge", choices=["pyes", "reasoning"], default="pyes")
            p.add_argument("--parallel", type=int)
            p.add_argument("--threads", type=int)
            p.add_argument("--floor-cases", type=int, default=30,
                           help="prompts sent straight to the runtime for the floor (its speed, not the run's)")
    p = sub.add_parser("report")
    p.add_argument("rows", nargs="+")
    p.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    if args.command == "report":
        print(report(args.rows, not args.no_write))
        return 0
    row = {"run": run, "exactness": exactness, "kernels": kernels}[args.command](args)
    print(json.dumps(row))
    with open(args.out, "a") as handle:
        handle.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
