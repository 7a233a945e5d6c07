"""The evalyard plugin entry point (``[project.entry-points.evalyard] retrieval``)."""

from evalyard import hookimpl

from .scorers import SCORERS


@hookimpl
def register_scorers(register):
    for scorer in SCORERS:
        register(scorer)
