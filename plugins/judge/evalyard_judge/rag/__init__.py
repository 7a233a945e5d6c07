"""Ragas' RAG metrics, judged through the judge service, registered as ``ragas/<metric>``.

Each module holds one family and its own ``SCORERS``; the values equal ragas 0.4.3's on the
same judge answers (see the plugin README for what each metric computes and where it differs).
"""

from __future__ import annotations

from . import multimodal, nvidia, passages, statements

#: The namespace the plugin registers these scorers under (``ragas/faithfulness``).
NAMESPACE = "ragas"

SCORERS = statements.SCORERS + passages.SCORERS + nvidia.SCORERS + multimodal.SCORERS
