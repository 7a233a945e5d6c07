"""``evalyard scorers``, ``plugins``, ``install`` and ``uninstall``: what is installed."""

from __future__ import annotations

import subprocess
import sys

import click

from .options import current_app, echo_json, json_option, table


@click.command()
@json_option
@click.option("--prompts-dir", "prompts_dirs", multiple=True, type=click.Path(file_okay=False),
              help="Also list the prompt scorers that templates in this directory declare (repeatable).")
def scorers(as_json, prompts_dirs):
    """List scorers: name, plugin, required case fields, config fields and defaults."""
    from ..scoring import describe_config

    app = current_app()
    app.use_prompt_dirs(prompts_dirs)
    registry = app.registry
    data = []
    for entry in registry.scorers:
        cls = entry.obj
        data.append({
            "name": registry.scorers.display_name(entry), "qualified": entry.qualified, "plugin": entry.plugin,
            "version": cls.version, "description": cls.description,
            "requires": list(cls.requires), "higher_is_better": cls.higher_is_better, "labels": list(cls.labels),
            "threshold": cls.threshold, "executor": cls.executor, "config": describe_config(cls.Config),
        })
    if as_json:
        echo_json(data)
        return
    click.echo(table(
        ["scorer", "plugin", "requires", "config (defaults)"],
        [[d["name"], d["plugin"], ", ".join(d["requires"]),
          ", ".join(f"{c['name']}={_short(c['default'])}" for c in d["config"]) or "-"] for d in data],
    ))


@click.command()
@json_option
def generators(as_json):
    """List generators: name, plugin, what each makes, required case fields, config fields and defaults."""
    from ..scoring import describe_config

    registry = current_app().registry
    data = []
    for entry in registry.generators:
        cls = entry.obj
        data.append({
            "name": registry.generators.display_name(entry), "qualified": entry.qualified, "plugin": entry.plugin,
            "version": cls.version, "description": cls.description, "produces": cls.produces,
            "requires": list(cls.requires), "fills": list(cls.fills), "config": describe_config(cls.Config),
        })
    if as_json:
        echo_json(data)
        return
    click.echo(table(
        ["generator", "plugin", "requires", "fills", "config (defaults)"],
        [[d["name"], d["plugin"], ", ".join(d["requires"]) or "-",
          ", ".join(d["fills"]) if d["produces"] == "candidate" else d["produces"],
          ", ".join(f"{c['name']}={_short(c['default'])}" for c in d["config"]) or "-"] for d in data],
    ))


def _short(value) -> str:
    """A default value short enough for a table cell (the full value is in --json)."""
    if isinstance(value, (list, tuple)) and len(repr(value)) > 30:
        return f"[{len(value)} items]"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


@click.command()
@json_option
@click.option("--all", "show_all", is_flag=True, help="Include the core's built-in plugins.")
@click.option("--settings", "show_settings", is_flag=True,
              help="List plugins' settings instead: name, type, default, variable, current value, help.")
def plugins(as_json, show_all, show_settings):
    """List loaded plugins: name, the namespaces it registers under, version and the hooks each implements."""
    if show_settings:
        _settings(as_json)
        return
    app = current_app()
    infos = [i for i in app.host.infos() if show_all or not i.builtin]
    # What a plugin registers under a namespace besides its own is known once it has registered.
    registry = app.registry if infos else None
    data = [
        {"name": i.name, "namespace": i.namespace, "namespaces": registry.namespaces(i.name), "version": i.version,
         "distribution": i.distribution, "builtin": i.builtin, "hooks": i.hooks,
         # the epoch reducers it registered, as --reducer names them (they have no listing of their own)
         "reducers": [registry.reducers.display_name(e) for e in registry.reducers if e.plugin == i.name]}
        for i in infos
    ]
    if as_json:
        echo_json(data)
        return
    if not data:
        click.echo("no plugins installed (evalyard install evalyard-lexicon, or see --all)")
        return
    click.echo(table(["plugin", "namespaces", "version", "distribution", "hooks"],
                     [[d["name"], ", ".join(d["namespaces"]), d["version"] or "-", d["distribution"] or "-",
                       ", ".join(d["hooks"])] for d in data]))


def _settings(as_json: bool) -> None:
    """``plugins --settings``: every declared setting and the value this application read."""
    from pathlib import Path

    def shown(value):
        return str(value) if isinstance(value, Path) else value

    data = [{"name": d.key, "type": d.type.__name__, "default": shown(d.default), "env": d.env,
             "value": shown(value), "help": d.help, "plugin": d.plugin}
            for d, value in current_app().plugin_settings]
    if as_json:
        echo_json(data)
        return
    click.echo(table(["setting", "type", "default", "variable", "value", "help"],
                     [[d["name"], d["type"], _short(d["default"]), d["env"] or "-", _short(d["value"]), d["help"]]
                      for d in data]))


def _pip(args: list[str]) -> None:
    # The interpreter running evalyard, so packages land in evalyard's own environment.
    completed = subprocess.run([sys.executable, "-m", "pip", *args])
    if completed.returncode:
        sys.exit(completed.returncode)


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("packages", nargs=-1, required=True)
@click.option("--editable", "-e", is_flag=True, help="Install a local project in editable mode.")
@click.option("--upgrade", "-U", is_flag=True, help="Upgrade packages that are already installed.")
def install(packages, editable, upgrade):
    """Install plugins (pip, into evalyard's environment). Other pip options pass through."""
    args = ["install"] + (["--upgrade"] if upgrade else [])
    for package in packages:
        args += ["-e", package] if editable and not package.startswith("-") else [package]
    _pip(args)


@click.command()
@click.argument("packages", nargs=-1, required=True)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
def uninstall(packages, yes):
    """Uninstall plugins (pip, from evalyard's environment)."""
    _pip(["uninstall", *packages] + (["-y"] if yes else []))


def register(cli: click.Group) -> None:
    for command in (scorers, generators, plugins, install, uninstall):
        cli.add_command(command)
