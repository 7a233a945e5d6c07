"""evalyard-embedding: embedding-based scorers for evalyard.

``bertscore``, ``hedging_language`` and ``semantic_similarity``, all running on
the bundled all-MiniLM-L6-v2 by default, offline. Importing this package (or
its ``plugin`` module) never imports torch, transformers or bert-score; they
load when a scorer first scores.
"""

__version__ = "0.1.0"
