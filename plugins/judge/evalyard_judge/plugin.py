"""The evalyard plugin entry point (``[project.entry-points.evalyard] judge``).

The criteria aspects are registered by their own entry point (``evalyard_judge.criteria``)
so they are namespaced ``criteria/``.
"""

from evalyard import hookimpl

from . import arthur, ragas
from .templates import register_all

SCORERS = arthur.SCORERS + ragas.SCORERS


@hookimpl
def register_scorers(register):
    for scorer in SCORERS:
        register(scorer)


@hookimpl
def register_prompt_templates(register):
    register_all(register)
