"""The evalyard plugin entry point (``[project.entry-points.evalyard] judge``).

The twelve criteria aspects are registered under a second namespace of this plugin,
``criteria``, so they are named ``criteria/<aspect>`` (blocking ``criteria`` drops them alone).
"""

from evalyard import hookimpl

from . import arthur, criteria, ragas
from .templates import register_all

SCORERS = arthur.SCORERS + ragas.SCORERS


@hookimpl
def register_scorers(register):
    for scorer in SCORERS:
        register(scorer)
    for scorer in criteria.SCORERS:
        register(scorer, namespace=criteria.NAMESPACE)


@hookimpl
def register_prompt_templates(register):
    register_all(register)
