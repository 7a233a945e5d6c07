"""``evalyard prompts list|show|render|new``: the prompt library from the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import click

class OneLineErrors(click.Group):
    """Turns evalyard's input and set-up errors into one line and exit code 2, also when the
    group is used on its own (tests, other front ends)."""

    def invoke(self, ctx: click.Context) -> Any:
        from ..errors import EvalyardError

        try:
            return super().invoke(ctx)
        except EvalyardError as exc:
            error = click.ClickException(str(exc))
            error.exit_code = 2
            raise error from None


prompts_dir_option = click.option(
    "--prompts-dir", "prompts_dirs", multiple=True, type=click.Path(file_okay=False),
    help="A directory of your own templates; overrides built-in and plugin templates (repeatable).")


def make_library(prompts_dirs: tuple[str, ...]) -> Any:
    """A group built without an application: --prompts-dir in order, then the built-ins (the
    ``evalyard`` command passes its application's library, settings' directories included)."""
    from ..prompting import PromptLibrary

    return PromptLibrary(list(map(Path, prompts_dirs)))


def read_case(spec: str) -> dict[str, Any]:
    """``FILE:ID`` -> that case's fields, from a YAML suite (``cases:``) or a JSONL file."""
    from ..errors import InputError

    path_text, sep, case_id = spec.rpartition(":")
    if not sep or not path_text:
        raise InputError(f"--case {spec!r}: expected FILE:ID")
    path = Path(path_text)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the file ({exc.strerror})", path=str(path)) from None
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        import yaml

        data = yaml.safe_load(text)
        rows = data.get("cases", []) if isinstance(data, dict) else data
    for n, row in enumerate(rows or [], 1):
        if isinstance(row, dict) and str(row.get("id", n)) == case_id:
            row = dict(row)
            row.setdefault("id", case_id)
            if isinstance(row.get("context"), str):
                row["context"] = [row["context"]]
            return row
    raise InputError(f"no case with id {case_id!r}", path=str(path))


def _listing(template: Any) -> dict[str, Any]:
    return {"name": template.name, "source": template.origin, "overrides": template.overrides,
            "answer": template.answer.kind, "fields": list(template.fields),
            "scorer": template.scorer is not None, "description": template.description,
            "hash": template.hash[:12]}


def no_judge(model: str | None) -> tuple[str | None, bool]:
    """Without an application: the model given, asked for reasoning (the default of hosted judges)."""
    return model, True


def build_group(load_case: Callable[[str], dict[str, Any]] = read_case,
                library_factory: Callable[[tuple[str, ...]], Any] = make_library,
                judge_habit: Callable[[str | None], tuple[str | None, bool]] = no_judge) -> click.Group:
    """The ``prompts`` group; the application may pass its own case loader and library factory, and
    ``judge_habit(model)``: the judge model a run would use (``model``, else the configured one or a
    plugin's default) and whether it is asked for reasoning by default."""

    @click.group("prompts", cls=OneLineErrors)
    def prompts() -> None:
        """Prompt templates: list, show, render, and start your own."""

    @prompts.command("list")
    @prompts_dir_option
    @click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
    def list_command(prompts_dirs: tuple[str, ...], as_json: bool) -> None:
        """Every template, where it comes from, and what it overrides."""
        from .options import table

        rows = [_listing(t) for t in library_factory(prompts_dirs).list()]
        if as_json:
            click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
            return
        click.echo(table(["name", "answer", "fields", "source", "overrides"],
                         [[r["name"], r["answer"] + (" (scorer)" if r["scorer"] else ""), ",".join(r["fields"]),
                           r["source"], ", ".join(r["overrides"]) or "-"] for r in rows]))

    @prompts.command("show")
    @click.argument("name")
    @prompts_dir_option
    def show_command(name: str, prompts_dirs: tuple[str, ...]) -> None:
        """Print a template's file, with its source."""
        template = library_factory(prompts_dirs).get(name)
        overrides = f" (overrides {', '.join(template.overrides)})" if template.overrides else ""
        click.echo(f"# {template.name} from {template.origin}{overrides}", err=True)
        click.echo(template.text.rstrip("\n"))

    @prompts.command("render")
    @click.argument("name")
    @click.option("--case", "case_spec", required=True, metavar="FILE:ID", help="The case to render.")
    @click.option("--reasoning/--no-reasoning", default=None,
                  help="Render with reasoning before the answer, or without (default: as the judge model is asked "
                       "by default: a small local model without).")
    @click.option("--judge-model", metavar="MODEL", help="The judge to render for (default: the configured one).")
    @click.option("--structured", is_flag=True, help="Render for a JSON (schema) answer.")
    @click.option("--var", "variables", multiple=True, metavar="NAME=VALUE", help="A template variable.")
    @prompts_dir_option
    @click.option("--json", "as_json", is_flag=True, help="Print the messages as JSON.")
    def render_command(name: str, case_spec: str, reasoning: bool | None, judge_model: str | None, structured: bool,
                       variables: tuple[str, ...], prompts_dirs: tuple[str, ...], as_json: bool) -> None:
        """The exact messages a scorer would send for one case (to the given or configured judge)."""
        from ..errors import InputError

        values = {}
        for item in variables:
            key, eq, value = item.partition("=")
            if not eq:
                raise InputError(f"--var {item!r}: expected NAME=VALUE")
            values[key] = value
        template = library_factory(prompts_dirs).get(name)
        structured = structured or template.answer.kind == "json"
        if reasoning is None:
            model, reasoning = judge_habit(judge_model)
            if not as_json:  # said to people; the JSON is the messages alone
                judge = f"judge {model}" if model else "a judge (no judge model configured; --judge-model MODEL)"
                click.echo(f"# as {judge} is asked by default: {'with' if reasoning else 'without'} reasoning "
                           f"(--reasoning / --no-reasoning to choose)", err=True)
        rendered = template.render(load_case(case_spec), variables=values, reasoning=reasoning,
                                   structured=structured)
        if as_json:
            click.echo(json.dumps(rendered.messages, indent=2, ensure_ascii=False))
            return
        for message in rendered.messages:
            click.echo(f"[{message['role']}]")
            content = message["content"]
            for part in content if isinstance(content, list) else [{"type": "text", "text": content}]:
                info = part.get("media") or {}  # a placed image or clip: named, not printed
                click.echo(part["text"] if part["type"] == "text" else
                           f"[{part['type']} {info.get('path') or info.get('sha256', 'not read')[:12]}]")
            click.echo()

    @prompts.command("new")
    @click.argument("name")
    @click.option("--answer", type=click.Choice(["binary", "score", "choice", "json"]), default="binary",
                  show_default=True, help="The shape of the judge's answer.")
    @click.option("--dir", "directory", default=".", type=click.Path(file_okay=False), show_default=True,
                  help="Where to write NAME.jinja.")
    @click.option("--force", is_flag=True, help="Replace an existing file.")
    def new_command(name: str, answer: str, directory: str, force: bool) -> None:
        """Write a starting template that works as a custom prompt scorer as written."""
        from ..prompting import write_starter

        path = write_starter(name, answer, directory, overwrite=force)
        click.echo(f"wrote {path}")
        click.echo(f"use it with: --prompts-dir {Path(directory)} and scorer {name.rsplit('/', 1)[-1]}")

    return prompts


def register(cli: click.Group, **options: Any) -> None:
    cli.add_command(build_group(**options))
