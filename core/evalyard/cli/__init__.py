"""The ``evalyard`` command line: a root group plus one module per command group.

The root group gets its application from the click context (``obj``): the console script
makes one from the environment, tests pass their own (``CliRunner().invoke(cli, args,
obj=app)``). Commands that plugins add through ``register_commands`` belong to that
application, so they are looked up through it. Only click is imported at start-up; each
command imports what it needs when it runs.
"""

from __future__ import annotations

import click

from ..errors import EvalyardError, InputError
from . import cache, compare, plugin_new, plugins, prompts, report, run, runs
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


BUILTIN_COMMANDS = click.Group()
for _module in (run, runs, compare, plugins, plugin_new, report):
    _module.register(BUILTIN_COMMANDS)
prompts.register(BUILTIN_COMMANDS, load_case=_case_from_suite,
                 library_factory=lambda dirs: current_app().prompt_library(first_dirs=dirs))
cache.register(BUILTIN_COMMANDS)


class EvalyardGroup(click.Group):
    """Built-in commands, then the application's plugin commands; evalyard errors become one line, exit 2."""

    def list_commands(self, ctx):
        names = set(BUILTIN_COMMANDS.commands)
        names |= set(self._plugin_commands(ctx).commands)
        return sorted(names)

    def get_command(self, ctx, name):
        command = BUILTIN_COMMANDS.commands.get(name)
        if command is None:
            command = self._plugin_commands(ctx).commands.get(name)
        return command

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
