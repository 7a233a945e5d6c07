"""The evalyard plugin entry point (``[project.entry-points.evalyard] judge``).

The twelve criteria aspects are registered under a second namespace of this plugin,
``criteria``, so they are named ``criteria/<aspect>`` (blocking ``criteria`` drops them alone);
Ragas' RAG metrics likewise under ``ragas`` (``ragas/faithfulness``).
"""

from evalyard import hookimpl

from . import arthur, criteria, rag, ragas
from .templates import register_all

SCORERS = arthur.SCORERS + ragas.SCORERS


@hookimpl
def register_scorers(register):
    for scorer in SCORERS:
        register(scorer)
    for scorer in criteria.SCORERS:
        register(scorer, namespace=criteria.NAMESPACE)
    for scorer in rag.SCORERS:
        register(scorer, namespace=rag.NAMESPACE)


@hookimpl
def register_prompt_templates(register):
    register_all(register)
