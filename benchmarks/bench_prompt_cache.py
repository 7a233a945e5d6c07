"""How much of each judge's prompt a provider's prefix cache could reuse from one case to the next.

Renders every prompt template the judges of `examples/judges.yaml` use (and the core's own) for
each case of `examples/judges.jsonl`, in the order a run sends them, and counts per template the
prompt tokens (whitespace-separated words, a stand-in for a tokenizer) that the previous case's
prompt already started with: the share a prefix cache (OpenAI's, Anthropic's with cache marks, a
local runtime's KV cache) could serve. OpenAI caches only prompts of 1,024 tokens and more, so for
these short prompts that share is what a local runtime or Anthropic reuses; a long rubric keeps the
same share.

    P="prompts plugins/judge/evalyard_judge/templates plugins/trust/evalyard_trust/prompts core/evalyard/prompting"
    git checkout 427fa5d -- $P && .venv/bin/python benchmarks/bench_prompt_cache.py --json > before.json
    git checkout HEAD -- $P && .venv/bin/python benchmarks/bench_prompt_cache.py --before before.json
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = ["judge/qa_correctness", "judge/summary_quality", "judge/hallucination_claims",
             "judge/hallucination_check", "judge/criterion", "judge/criterion_correctness",
             "judge/criterion_source", "judge/criterion_hallucination", "judge/summarization_keyphrases",
             "correctness", "faithfulness", "helpfulness", "relevance", "criterion", "trust/entailment"]


def measure() -> dict[str, dict[str, float]]:
    from evalyard import Application, Case
    from evalyard.app import plugin_templates
    from evalyard.runtime import Runtime

    os.environ.pop("EVALYARD_LOAD_PLUGINS", None)
    app = Application()
    library = Runtime(plugin_templates=plugin_templates(app.registry)).prompts
    rows = [json.loads(line) for line in (ROOT / "examples" / "judges.jsonl").read_text().splitlines() if line]
    cases = [Case(id=r["id"], input=r.get("input"), candidate=r.get("candidate"), reference=r.get("reference"),
                  context=r.get("context") or [r.get("input") or ""],
                  metadata={"response_a": r.get("candidate"), "response_b": r.get("reference") or "",
                            "claim": r.get("candidate"), "question": "Is the response concise?"})
             for r in rows]
    out = {}
    for name in TEMPLATES:
        template = library.get(name)
        structured = template.answer.kind == "json"
        previous, shared, total = None, 0, 0
        for case in cases:
            try:
                prompt = template.render(case, structured=structured)
            except Exception:  # a field this template needs that the example case has not
                continue
            words = "\n".join(m["content"] for m in prompt.messages).split()
            if previous is not None:
                common = 0
                for a, b in zip(previous, words):
                    if a != b:
                        break
                    common += 1
                shared += common
                total += len(words)
            previous = words
        if total:
            out[name] = {"shared": shared / total, "tokens": total / max(1, len(cases) - 1)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true", help="print the figures of the code imported, as JSON")
    parser.add_argument("--before", type=Path, help="figures of the earlier layout (--json output) to compare")
    args = parser.parse_args()
    after = measure()
    if args.json:
        print(json.dumps(after))
        return
    before = json.loads(args.before.read_text()) if args.before else {}
    lines = ["## Prompt prefix caching", "",
             "Share of each prompt's tokens (words) that the previous case's prompt already began with, over the "
             "five cases of `examples/judges.jsonl` rendered in order: what a prefix cache could reuse. Before: "
             "the layout with the case's data ahead of the instructions and a per-call marker notice after it "
             "(commit 427fa5d); after: static part first.", "",
             "Before: the templates and prompting code of 427fa5d checked out (`git checkout 427fa5d -- prompts "
             "plugins/judge/evalyard_judge/templates plugins/trust/evalyard_trust/prompts core/evalyard/prompting`), "
             "`.venv/bin/python benchmarks/bench_prompt_cache.py --json > before.json`; after: the same files back "
             "at HEAD, `.venv/bin/python benchmarks/bench_prompt_cache.py --before before.json`.", "",
             "| template | tokens per prompt (after) | shared before | shared after |", "|---|---|---|---|"]
    for name, figures in after.items():
        old = before.get(name, {}).get("shared")
        lines.append(f"| {name} | {figures['tokens']:.0f} | {'-' if old is None else f'{old:.0%}'} | "
                     f"{figures['shared']:.0%} |")
    lines += ["", "Short example texts make the data a large part of each prompt; with a rubric of 1,500 tokens the "
                  "shared share approaches the rubric's. OpenAI serves cached prefixes only from 1,024 tokens on.", "",
              f"{os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}.", ""]
    print("\n".join(lines))
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from results_file import write_section

    write_section("Prompt prefix caching", "\n".join(lines))


if __name__ == "__main__":
    main()
