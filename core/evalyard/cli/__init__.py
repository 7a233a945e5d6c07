"""The ``evalyard`` command line: a root group plus one module per command group.

Only click is imported at start-up; each command imports what it needs when it
runs, so ``evalyard --help`` stays fast however many plugins are installed.
"""

from __future__ import annotations

import sys

import click

from ..console import end_startup
from ..errors import EvalyardError

#: Commands whose start-up ends when they open the database (see console.py).
_STORE_COMMANDS = frozenset({"run", "runs", "compare"})


class CLIError(click.ClickException):
    """Bad usage or bad input: one line on stderr, exit code 2."""

    exit_code = 2


class EvalyardGroup(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except EvalyardError as exc:
            raise CLIError(str(exc)) from None


@click.group(cls=EvalyardGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="evalyard")
@click.pass_context
def cli(ctx):
    """evalyard: evaluate LLM outputs with pluggable scorers; every run is kept.

    \b
    Start with:
      evalyard scorers                 what can be measured
      evalyard run suite.yaml          score a suite, print a summary
      evalyard runs list               the runs kept in the database
      evalyard compare BASE NEW        what changed between two runs
    """
    if ctx.invoked_subcommand not in _STORE_COMMANDS:
        end_startup()  # these commands have no database to load: collection back on now


def _load_commands() -> None:
    from . import compare, plugin_new, plugins, report, run, runs

    for module in (run, runs, compare, plugins, plugin_new, report):
        module.register(cli)
    from ..plugins import get_plugin_manager

    try:
        get_plugin_manager().hook.register_commands(cli=cli)
    except EvalyardError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(2)


_load_commands()


def main() -> None:
    """The console script: run the command, then leave without the interpreter's teardown.

    Once SQLAlchemy and pydantic are loaded, Python's own finalisation (clearing every
    module, collecting every object) costs ~0.2 s of CPU -- a third of a small run.
    Nothing is left to do by then: results are committed per batch and the store is
    closed. So stdout/stderr are flushed, atexit handlers (plugins' clean-ups, logging)
    run, and the process exits with the command's status.
    """
    try:
        cli(prog_name="evalyard")
        code = 0
    except SystemExit as exc:
        code = exc.code
    _exit_now(code)


def _exit_now(code: object) -> None:
    import atexit
    import os

    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message"): print it, status 1, as Python does
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (evalyard ... | head): nothing more to say
            code = code or 1
    atexit._run_exitfuncs()
    os._exit(code)
