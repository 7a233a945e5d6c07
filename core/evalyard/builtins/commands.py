"""The core's own commands (``run``, ``runs``, ``compare``, ``prompts``...), added through the same
``register_commands`` hook a plugin uses. The command modules (and click) are imported when the
command line asks for its commands, never when a Python caller loads the plugins."""

from __future__ import annotations

from ..hookspecs import hookimpl


@hookimpl
def register_commands(cli):
    from ..cli import add_builtin_commands

    add_builtin_commands(cli)
