"""The core's commands are added by a built-in plugin through ``register_commands``, like a
plugin's: blocking it removes them, tracing shows it, and a command name belongs to one plugin."""

from __future__ import annotations

import click
from click.testing import CliRunner

import evalyard
from evalyard import Settings, hookimpl
from evalyard.cli import cli

CORE_COMMANDS = {"run", "runs", "compare", "scorers", "plugins", "plugin", "report", "serve", "label", "prompts", "cache",
                 "install", "uninstall"}


def commands_of(app) -> set[str]:
    return set(app.plugin_commands().commands)


def test_the_core_commands_come_from_the_builtin_plugin(app):
    assert CORE_COMMANDS <= commands_of(app)
    info = {i.name: i for i in app.host.infos()}["evalyard.builtins.commands"]
    assert info.builtin and info.hooks == ["register_commands"]
    blocked = evalyard.Application(Settings.from_env(block_plugins=frozenset({"evalyard.builtins.commands"})))
    assert not CORE_COMMANDS & commands_of(blocked)
    result = CliRunner().invoke(cli, ["run", "x.jsonl"], obj=blocked)
    assert result.exit_code == 2 and "No such command 'run'" in result.output


def test_tracing_shows_the_builtin_commands_hook(capsys):
    app = evalyard.Application(Settings.from_env(trace_plugins=True))
    commands_of(app)
    assert "register_commands" in capsys.readouterr().err


def test_a_plugin_cannot_take_a_core_command_name(app):
    class Shadow:
        @hookimpl
        def register_commands(self, cli):
            @cli.command("run")
            def run():
                """Not the real run."""

    app.register_plugin(Shadow(), name="shadow")
    result = CliRunner().invoke(cli, ["--help"], obj=app)
    assert result.exit_code == 2
    assert "plugin 'shadow' adds the command 'run', which plugin 'evalyard.builtins.commands' added" in result.output


def test_a_plugins_command_joins_the_core_ones(app):
    class Hello:
        @hookimpl
        def register_commands(self, cli):
            @cli.command("hello")
            def hello():
                """Say hello."""
                click.echo("hello from a plugin")

    app.register_plugin(Hello(), name="hello")
    listed = CliRunner().invoke(cli, ["--help"], obj=app)
    assert listed.exit_code == 0 and "hello" in listed.output and "run" in listed.output
    assert CliRunner().invoke(cli, ["hello"], obj=app).output == "hello from a plugin\n"
