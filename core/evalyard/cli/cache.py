"""``evalyard cache stats|clear``: the model-response cache in the database."""

from __future__ import annotations

import json
from typing import Any, Callable

import click

from .options import db_option
from .prompts import OneLineErrors


def default_engine(db_url: str | None) -> Any:
    from .options import open_store

    return open_store(db_url).engine


def build_group(engine_factory: Callable[[str | None], Any] = default_engine) -> click.Group:
    """The ``cache`` group; the application may pass how to open the database's engine."""

    @click.group("cache", cls=OneLineErrors)
    def cache() -> None:
        """The model-response cache: what it holds, and clearing it."""

    @cache.command("stats")
    @db_option
    @click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
    def stats_command(db_url: str | None, as_json: bool) -> None:
        """Cached calls per model, with their tokens and original cost."""
        from ..models import cache_stats, format_cost
        from .options import table

        rows = cache_stats(engine_factory(db_url))
        if as_json:
            click.echo(json.dumps(rows, indent=2, default=str))
            return
        if not rows:
            click.echo("the cache is empty")
            return
        click.echo(table(["model", "calls", "tokens in", "tokens out", "cost", "oldest", "newest"],
                         [[r["model"], r["calls"], r["prompt_tokens"], r["completion_tokens"],
                           format_cost(r["cost"], r["calls_with_unknown_cost"] == 0),
                           str(r["oldest"])[:19], str(r["newest"])[:19]] for r in rows]))

    @cache.command("clear")
    @db_option
    @click.option("--model", default=None, help="Only this model's cached calls.")
    @click.option("--older-than", default=None, metavar="AGE", help="Only calls older than AGE (90s, 30m, 12h, 7d, 2w).")
    def clear_command(db_url: str | None, model: str | None, older_than: str | None) -> None:
        """Delete cached calls (all of them unless narrowed)."""
        from ..errors import InputError
        from ..models import clear_cache, parse_age

        age = None
        if older_than is not None:
            try:
                age = parse_age(older_than)
            except ValueError as exc:
                raise InputError(f"--older-than: {exc}") from None
        removed = clear_cache(engine_factory(db_url), model=model, older_than=age)
        click.echo(f"removed {removed} cached call{'s' if removed != 1 else ''}")

    return cache


def register(cli: click.Group, **options: Any) -> None:
    cli.add_command(build_group(**options))
