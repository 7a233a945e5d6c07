"""Stopping a run from outside: Ctrl-C (SIGINT) and SIGTERM end it the same way.

SIGTERM is what a CI job's timeout, ``docker stop`` and most process supervisors send.
Python's default for it is to die at once, leaving the run marked ``running``; here it
raises ``Terminated``, a ``KeyboardInterrupt``, so it unwinds every path Ctrl-C does: the
run's tasks are cancelled, results already written stay, the run is marked
``interrupted`` and the resume command is printed. The exit code then follows the
shell's convention, 128 + the signal's number: 130 for SIGINT, 143 for SIGTERM.
"""

from __future__ import annotations

import signal
import threading
from typing import Callable

EXIT_INTERRUPTED = 128 + signal.SIGINT
EXIT_TERMINATED = 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived (raised in the main thread, where Python runs signal handlers)."""


def _raise_terminated(signum, frame) -> None:
    raise Terminated()


def terminate_as_interrupt() -> Callable[[], None]:
    """Make SIGTERM raise ``Terminated`` until the returned function restores the previous handler.

    Only the main thread may install a handler; elsewhere (a CLI invoked from a worker
    thread) this changes nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    return lambda: signal.signal(signal.SIGTERM, previous)


def exit_code(stop: KeyboardInterrupt) -> int:
    return EXIT_TERMINATED if isinstance(stop, Terminated) else EXIT_INTERRUPTED
