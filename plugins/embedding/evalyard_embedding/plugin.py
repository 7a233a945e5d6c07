"""Entry point of the plugin (``[project.entry-points.evalyard] embedding``)."""

from evalyard import hookimpl

from .bertscore import BertScore
from .hedging import HedgingLanguage
from .similarity import SemanticSimilarity

SCORERS = (BertScore, HedgingLanguage, SemanticSimilarity)


@hookimpl
def register_scorers(register):
    for scorer in SCORERS:
        register(scorer)
