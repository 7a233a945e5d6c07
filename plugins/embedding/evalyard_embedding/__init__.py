"""evalyard-embedding: embedding-based scorers for evalyard.

``bertscore``, ``hedging_language`` and ``semantic_similarity``, all running on
the bundled all-MiniLM-L6-v2 by default, offline. Importing this package (or
its ``plugin`` module) never imports torch, transformers or bert-score; they
load when a scorer first scores.
"""

__version__ = "0.1.0"

#: Public names other plugins use (checklist's refiners), imported on first use.
_PUBLIC = {"get_model": "models", "sentence_embeddings": "encoding"}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'evalyard_embedding' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)
