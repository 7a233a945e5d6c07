"""``evalyard testset generate DOCS... -o cases.jsonl``: a retrieval test set from a team's documents.

    evalyard testset generate docs/ -m local/qwen2.5-coder-1.5b -o cases.jsonl
    (index cases.chunks.jsonl with your retriever; its ids are the cases' `relevant`)
    evalyard run cases.jsonl -g rag/pipeline ... -s recall@5 -s ndcg@10
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .generate import STYLES, Options

if TYPE_CHECKING:
    from evalyard import Runtime


@click.group("testset")
def testset_group():
    """Test sets made from your own documents."""


def _styles(_ctx, _param, value: str | None) -> tuple[str, ...]:
    if value is None:
        return tuple(STYLES)
    names = tuple(s.strip() for s in value.split(",") if s.strip())
    unknown = [s for s in names if s not in STYLES]
    if unknown or not names:
        raise click.BadParameter(f"unknown style {unknown[0] if unknown else value!r} (known: {', '.join(STYLES)})")
    return names


@testset_group.command("generate")
@click.argument("docs", nargs=-1, required=True)
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False), help="The test set (JSONL) to write.")
@click.option("--model", "-m", required=True, help="The model that writes the questions.")
@click.option("--judge-model", help="The model that checks each question is answerable (default: --model).")
@click.option("--size", "-n", default=20, show_default=True, type=click.IntRange(1),
              help="How many questions to ask for (duplicates and unanswerable ones are dropped after).")
@click.option("--multi-hop", default=0.25, show_default=True, type=click.FloatRange(0, 1),
              help="Share of the questions that need two chunks.")
@click.option("--styles", callback=_styles, help=f"Query styles to draw from (default all: {', '.join(STYLES)}).")
@click.option("--chunk-size", default=200, show_default=True, type=int, help="Words per chunk at most.")
@click.option("--min-words", default=30, show_default=True, type=click.IntRange(1),
              help="Chunks shorter than this get no question (still in the chunk file).")
@click.option("--chunks", "chunks_path", type=click.Path(dir_okay=False),
              help="Where to write the chunks (default: OUTPUT with .chunks.jsonl).")
@click.option("--seed", default=0, show_default=True, help="Which chunks, pairs and styles are drawn.")
@click.option("--no-check", is_flag=True, help="Keep every question without asking a judge whether it is answerable.")
@click.option("--keep-unanswerable", is_flag=True, help="Write questions the check found unanswerable too.")
@click.option("--models", "models_file", type=click.Path(exists=True, dir_okay=False),
              help="A YAML file whose `models:` section gives provider settings (api_base...), as in a suite.")
@click.option("--concurrency", "-c", default=4, show_default=True, type=click.IntRange(1), help="Calls in flight.")
@click.option("--plan", is_flag=True, help="Say which calls would be made (and which are cached); ask nothing.")
@click.option("--no-cache", is_flag=True, help="Ask the model again instead of reusing cached answers.")
@click.option("--db", "db_url", envvar="EVALYARD_DB", metavar="URL", help="Database (the model-call cache).")
def generate(docs, output, model, judge_model, size, multi_hop, styles, chunk_size, min_words, chunks_path, seed,
             no_check, keep_unanswerable, models_file, concurrency, plan, no_cache, db_url):
    """Chunk DOCS (files or folders of .txt, .md, .rst, .html, .pdf), write single- and multi-hop
    questions with reference answers and the ids of the chunks that answer them, drop duplicates,
    and keep those a judge finds answerable from their chunks. Writes OUTPUT and the chunk file
    your retriever indexes. Model calls are cached: a rerun (or an interrupted run run again)
    asks only what it has not asked. Exit 1 when some question could not be made."""
    from evalyard import InputError, current_app, run_sync

    from .documents import load_chunks
    from .generate import generate as ask_all
    from .generate import plan_items

    options = Options(size=size, multi_hop=multi_hop, styles=styles, seed=seed, min_words=min_words,
                      check=not no_check, keep_unanswerable=keep_unanswerable)
    chunks = load_chunks(list(docs), chunk_size)
    items = plan_items(chunks, options)
    if not items:
        raise InputError(f"no chunk has {min_words} words or more to ask about (--min-words)", path=docs[0])
    app = current_app()
    checker = judge_model or model
    runtime = app.runtime({"judge_model": checker, "models": _read_models_file(models_file),
                           "use_cache": not no_cache}, concurrency)
    judges = _judges(runtime, model, checker, options.temperature)
    runtime.store = app.open_store(db_url)
    if plan:
        _print_plan(runtime, judges, items, options, model, checker, use_cache=not no_cache)
        return
    try:
        run_sync(lambda: ask_all(items, judges, options, concurrency))
    finally:
        runtime.close()
    out = Path(output)
    chunk_out = Path(chunks_path) if chunks_path else out.with_name(out.name.removesuffix(".jsonl") + ".chunks.jsonl")
    names = {"model": model, "judge_model": checker if options.check else None}
    kept = [item for item in items if item.question is not None and item.error is None and item.dropped is None]
    _write_jsonl(out, [item.record(names) for item in kept])
    _write_jsonl(chunk_out, [c.to_dict() for c in chunks])
    failed = [item for item in items if item.error is not None]
    dropped = Counter(item.dropped.split(" of ")[0] for item in items if item.dropped)
    usage = runtime.usage() or {}
    click.echo(f"{len(kept)} question{'s' if len(kept) != 1 else ''} written to {out} "
               f"({sum(1 for i in kept if i.kind == 'multi_hop')} multi-hop) from {len(chunks)} chunks in {chunk_out}")
    dropped_text = ", ".join(f"{n} dropped as {why}" for why, n in sorted(dropped.items())) or "none dropped"
    click.echo(f"asked {len(items)}: {len(failed)} failed, {dropped_text}")
    hits = usage.get("cache_hits", 0)
    click.echo(f"model calls made {usage.get('calls', 0) - hits}, answered from the cache {hits}")
    for item in failed[:5]:
        click.echo(f"  {item.id} ({item.chunks[0].id}): {item.error}", err=True)
    if failed:
        raise SystemExit(1)


def _read_models_file(path: str | None) -> dict[str, dict[str, Any]]:
    if path is None:
        return {}
    import yaml

    from evalyard import InputError, parse_model_settings

    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InputError(f"cannot read the model settings ({str(exc).splitlines()[0]})", path=path) from None
    if not isinstance(doc, dict) or "models" not in doc:
        raise InputError("expected a mapping with a `models:` section", path=path)
    return parse_model_settings(doc["models"], path, 1)


def _judges(runtime: Runtime, model: str, checker: str, temperature: float) -> dict[str, Any]:
    from evalyard import ConfigError, InputError

    from . import TEMPLATE_DIR

    def judge(stem: str, chosen: str, temp: float) -> Any:
        return runtime.judge(f"retrieval/{stem}", chosen, scorer="testset", default=TEMPLATE_DIR / f"{stem}.jinja",
                             reasoning=False, structured=True, params={"temperature": temp})

    try:
        return {"single_hop": judge("testset_question", model, temperature),
                "multi_hop": judge("testset_multi_hop", model, temperature),
                "check": judge("testset_check", checker, 0.0)}
    except ConfigError as exc:
        raise InputError(str(exc)) from None


def _print_plan(runtime: Runtime, judges: dict[str, Any], items: list, options: Options, model: str, checker: str, *,
                use_cache: bool) -> None:
    """Per step: calls, how many are cached, input tokens (litellm's default tokenizer: an
    estimate for models other than OpenAI's). The checks' prompts hold answers not written yet,
    so their count is an upper bound and their tokens are estimated from the chunks."""
    from evalyard import table

    litellm = runtime.models.litellm
    cached_keys: set[str] = set()
    requests = {kind: [r for item in items if item.kind == kind for r in judges[kind].planned(item.prompt_case())]
                for kind in ("single_hop", "multi_hop")}
    if use_cache:
        from evalyard import cached_calls

        keys = [r.key for rs in requests.values() for r in rs]
        cached_keys = set(cached_calls(runtime.store, keys)) if keys else set()

    def tokens(rs: list) -> int:
        return sum(int(litellm.token_counter(model="", messages=[{"role": m["role"], "content": _text(m["content"])}
                                                                  for m in r.messages])) for r in rs)

    rows = []
    for kind, rs in requests.items():
        if rs:
            rows.append([kind, model, len(rs), sum(1 for r in rs if r.key in cached_keys), tokens(rs)])
    if options.check:
        words = sum(c.words for item in items for c in item.chunks)
        rows.append(["check (at most)", checker, len(items), "-", int(words * 1.35) + 250 * len(items)])
    click.echo(table(["step", "model", "calls", "cached", "tokens in (estimate)"], rows))
    click.echo("nothing asked (--plan)")


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    """Written whole or not at all: a temporary file beside it, renamed over it."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with temporary.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    temporary.replace(path)
