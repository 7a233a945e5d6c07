"""The ``evalyard`` console script: a start-up setting, then the click CLI.

Start-up creates some 10^5 objects that live until the process exits (click, the
plugins, and for commands that use the database, SQLAlchemy, SQLModel and pydantic).
With the cyclic garbage collector on, each of its collections walks the ones made
so far: 0.06-0.08 s of CPU for ``evalyard run``, a tenth of a small run. So the collector
is off while they are created; ``end_startup`` freezes them (later collections skip
them) and turns it back on. Commands that open the database call it once the database
layer is loaded (``cli.options.open_store``); every other command before it runs.
"""

from __future__ import annotations

import gc

_startup = False


def main() -> None:
    global _startup
    if gc.isenabled():
        gc.disable()
        _startup = True
    from .cli import main as run_cli

    run_cli()


def end_startup() -> None:
    """Collection back on, with everything created so far frozen. Harmless when called twice."""
    global _startup
    if _startup:
        _startup = False
        gc.freeze()
        gc.enable()
