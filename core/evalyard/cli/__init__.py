"""The ``evalyard`` command line: a root group plus one module per command group.

The root group gets its application from the click context (``obj``): the console script
makes one from the environment, tests pass their own (``CliRunner().invoke(cli, args,
obj=app)``). Every command, the core's own included (``evalyard.builtins.commands``), is added
through ``register_commands`` and belongs to that application, so it is looked up through it.
Only click is imported at start-up; each command imports what it needs when it runs.
"""

from __future__ import annotations

import sys

import click

from ..errors import EvalyardError, InputError
from .options import CLIError, current_app


def _case_from_suite(spec: str) -> dict:
    """``FILE:ID`` -> that case's fields, read by the same loaders as ``evalyard run``."""
    path, sep, case_id = spec.rpartition(":")
    if not sep or not path:
        raise InputError(f"--case {spec!r}: expected FILE:ID")
    suite, _ = current_app().load_suite(path)
    for case in suite.cases:
        if case.id == case_id:
            return case.to_dict()
    raise InputError(f"no case with id {case_id!r}", path=path)


def _judge_habit(model: str | None) -> tuple[str | None, bool]:
    """The judge model a run would use (``model``, the settings', else a plugin's default) and whether
    judges ask it for reasoning by default (not a small local model): what ``prompts render`` shows."""
    app = current_app()
    runtime = app.runtime({"judge_model": model or app.settings.judge_model}, 1)
    try:
        chosen = runtime.judge_model
        return chosen, bool(chosen is None or runtime.models.reasons_by_default(chosen))
    finally:
        runtime.close()


def add_builtin_commands(group: click.Group) -> None:
    """The core's commands, added by its built-in plugin through ``register_commands``."""
    from . import (cache, calibrate, collect, compare, experiments, label, plugin_new, plugins, prompts, report, review,
                   run, runs)

    for module in (run, runs, experiments, compare, calibrate, plugins, plugin_new, report, label, review, collect):
        module.register(group)
    prompts.register(group, load_case=_case_from_suite,
                     library_factory=lambda dirs: current_app().prompt_library(first_dirs=dirs),
                     judge_habit=_judge_habit)
    cache.register(group)


class EvalyardGroup(click.Group):
    """The application's commands (the core's and plugins'); evalyard errors become one line, exit 2."""

    def list_commands(self, ctx):
        return sorted(self._plugin_commands(ctx).commands)

    def get_command(self, ctx, name):
        return self._plugin_commands(ctx).commands.get(name)

    def _plugin_commands(self, ctx) -> click.Group:
        try:
            return current_app(ctx).plugin_commands()
        except EvalyardError as exc:
            raise CLIError(str(exc)) from None

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except EvalyardError as exc:
            raise CLIError(str(exc)) from None
        except Exception as exc:
            if "evalyard.store" in sys.modules:  # only a store can have failed on its database
                from ..store import database_failure

                if database_failure(exc):  # a database that went away or stayed locked
                    raise CLIError(_database_error(exc)) from None
            raise


def _database_error(exc: Exception) -> str:
    """One line for a database failure past the point of opening it (a SQLite file locked by other
    writers for longer than the busy timeout, a PostgreSQL server gone)."""
    reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
    return (f"database error: {reason} (what was written before it is kept; an unfinished run continues "
            "with `evalyard run --resume RUN_ID`, see `evalyard runs list`)")


@click.group(cls=EvalyardGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="evalyard")
def cli():
    """evalyard: evaluate LLM outputs with pluggable scorers; every run is kept.

    \b
    Start with:
      evalyard scorers                 what can be measured
      evalyard run suite.yaml          score a suite, print a summary
      evalyard runs list               the runs kept in the database
      evalyard compare BASE NEW        what changed between two runs
    """
