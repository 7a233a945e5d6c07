"""Entry point of the plugin (``[project.entry-points.evalyard] embedding``)."""

from evalyard import hookimpl

from .bertscore import BertScore
from .hedging import HedgingLanguage
from .similarity import SemanticSimilarity

SCORERS = (BertScore, HedgingLanguage, SemanticSimilarity)


@hookimpl
def register_settings(register):
    register("cache_mb", float, 512.0, env="EVALYARD_EMBEDDING_CACHE_MB",
             help="megabytes of embeddings each loaded model's two caches keep")
    register("offline", bool, True, env="HF_HUB_OFFLINE",
             help="load models from local folders and the Hugging Face cache only (0: allow downloads)")


@hookimpl
def register_scorers(register):
    for scorer in SCORERS:
        register(scorer)
