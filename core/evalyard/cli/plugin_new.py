"""``evalyard plugin new NAME``: start a new plugin project from the template."""

from __future__ import annotations

from pathlib import Path

import click


@click.group()
def plugin():
    """Write your own plugins."""


@plugin.command("new")
@click.argument("name")
@click.option("--directory", "-d", type=click.Path(file_okay=False), help="Where to create it (default: ./evalyard-NAME).")
def new(name, directory):
    """Create a plugin project NAME with a scorer, an entry point and tests."""
    from ..plugin_new import render_plugin

    target = Path(directory or f"evalyard-{name.replace('_', '-')}")
    for path in render_plugin(name, target):
        click.echo(f"created {path}")
    click.echo(f"\nnext: evalyard install -e {target} && evalyard scorers")


def register(cli: click.Group) -> None:
    cli.add_command(plugin)
