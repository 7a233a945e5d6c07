"""The evalyard plugin entry point (``[project.entry-points.evalyard] retrieval``)."""

from evalyard import hookimpl

from . import context, scorers


@hookimpl
def register_scorers(register):
    for scorer in (*scorers.SCORERS, *context.SCORERS):
        register(scorer)
