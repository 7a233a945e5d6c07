"""``evalyard checklist ...``: generate checklists for a suite, list the pipelines.

    evalyard checklist generate SUITE --pipeline tick --model M -o checklists.jsonl
    (edit checklists.jsonl)
    evalyard run SUITE -s "checklist:checklists=checklists.jsonl" --judge-model J
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from evalyard import Runtime


def _options(pairs: tuple[str, ...], config_file: str | None) -> dict[str, Any]:
    from evalyard import InputError

    options: dict[str, Any] = {}
    if config_file:
        import yaml

        try:
            loaded = yaml.safe_load(Path(config_file).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise InputError(f"cannot read the generator config ({exc})", path=config_file) from None
        if not isinstance(loaded, dict):
            raise InputError("the generator config is a mapping of options", path=config_file)
        options.update(loaded)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--option {pair!r}: expected KEY=VALUE")
        options[key.strip()] = value
    return options


@click.group("checklist")
def checklist_group():
    """Checklists (AutoChecklist's pipelines): generate them for a suite, then score with them."""


@checklist_group.command("pipelines")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def pipelines(as_json):
    """The checklist pipelines: level, inputs, defaults and the scorer config each is scored with."""
    from evalyard import echo_json, table

    from .generators import GENERATOR_CLASSES

    rows = [cls().describe() | {"description": cls.description} for cls in GENERATOR_CLASSES]
    if as_json:
        echo_json(rows)
        return
    click.echo(table(["pipeline", "level", "needs", "temp", "max", "min", "scorer"],
                     [[r["name"], r["level"], ", ".join(r["requires"]) or "-", r["temperature"], r["max_items"] or "-",
                       r["min_items"], ",".join(f"{k}={v}" for k, v in r["default_scorer"].items())] for r in rows]))


@checklist_group.command("generate")
@click.argument("suite")
@click.option("--pipeline", "-p", required=True, help="tick, rocketeval, rlcf_direct, ... (evalyard checklist pipelines)")
@click.option("--model", "-m", required=True, help="The model that writes the checklists.")
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False), help="JSONL file to write.")
@click.option("--option", "-O", "pairs", multiple=True, metavar="KEY=VALUE",
              help="A generator option (max_items, min_items, temperature, template, ...); repeatable.")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False),
              help="YAML/JSON mapping of generator options (checkeval's dimensions, ...).")
@click.option("--concurrency", "-c", default=4, show_default=True, help="Model requests in flight.")
@click.option("--prompts-dir", "prompt_dirs", multiple=True, type=click.Path(file_okay=False),
              help="Your own templates (override the plugin's generation prompts).")
@click.option("--no-cache", is_flag=True, help="Ask the model again instead of reusing cached answers.")
@click.option("--db", "db_url", envvar="EVALYARD_DB", metavar="URL", help="Database (the model-call cache).")
def generate(suite, pipeline, model, output, pairs, config_file, concurrency, prompt_dirs, no_cache, db_url):
    """Generate a checklist per case (or one for the whole suite) into OUTPUT, ready to edit and to score with
    ``-s checklist:checklists=OUTPUT``. Exit 1 when some case got no checklist."""
    from evalyard import ConfigError, InputError
    from evalyard import current_app

    from .generators import make_generator

    app = current_app()
    if prompt_dirs:
        app.use_prompt_dirs(prompt_dirs)
    loaded, origins = app.load_suite(suite)
    try:
        generator = make_generator(pipeline, {"model": model, **_options(pairs, config_file)})
    except ConfigError as exc:
        raise InputError(f"--pipeline {pipeline}: {exc}") from None
    for case, origin in zip(loaded.cases, origins):
        for name in generator.required_fields():
            if generator.level == "instance" and not case.has(name):
                raise InputError(f"case {case.id!r} has no {name}, which pipeline {generator.name} needs",
                                 path=origin.rpartition(":")[0] or origin, field=name)
    runtime = app.runtime({"judge_model": model, "prompt_dirs": [*app.settings.prompt_dirs, *loaded.prompt_dirs],
                           "models": loaded.models, "use_cache": not no_cache}, concurrency)
    try:
        generator.bind(runtime)
    except ConfigError as exc:
        raise InputError(f"--pipeline {pipeline}: {exc}") from None
    runtime.store = app.open_store(db_url)
    records = generate_records(generator, loaded.cases, runtime, concurrency)
    path = Path(output)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    failed = [r for r in records if r.get("error")]
    usage = runtime.usage() or {}
    made = len(records) - len(failed)
    click.echo(f"{made} checklist{'s' if made != 1 else ''} written to {path} ({len(failed)} failed); "
               f"model calls {usage.get('calls', 0)}, cache hits {usage.get('cache_hits', 0)}")
    for record in failed[:5]:
        click.echo(f"  {record.get('case_id') or 'corpus'}: {record['error']}", err=True)
    scorer = ",".join([f"checklists={path}"] + [f"{k}={v}" for k, v in generator.default_scorer.items()])
    click.echo(f'score with: evalyard run {suite} -s "checklist:{scorer}" --judge-model MODEL')
    if failed:
        raise SystemExit(1)


def generate_records(generator: Any, cases: list, runtime: Runtime, concurrency: int) -> list[dict[str, Any]]:
    """The JSONL records: one per case (instance level) or one without case_id (corpus level)."""
    import asyncio

    from evalyard import run_sync

    def record(made: Any, case_id: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {"case_id": case_id} if case_id is not None else {}
        out["pipeline"] = generator.name
        if made.error is not None:
            out["error"] = made.error
            if made.raw:
                out["raw"] = made.raw
        else:
            out["checklist"] = made.checklist.to_dict()
        out["details"] = made.details
        return out

    async def work() -> list[dict[str, Any]]:
        try:
            if generator.level == "corpus":
                return [record(await generator.generate_corpus(cases), None)]
            slots = asyncio.Semaphore(max(1, concurrency))

            async def one(case: Any) -> dict[str, Any]:
                async with slots:
                    return record(await generator.make_checklist(case), case.id)

            return list(await asyncio.gather(*(one(c) for c in cases)))
        finally:
            runtime.close()

    return run_sync(work)
