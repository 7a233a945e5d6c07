"""Retrieval measures as trec_eval defines them, on one query.

A ranking is a list of ``(doc_id, score)`` pairs, or of doc ids with no score. With scores, the
ranking is put in trec_eval's order first: score descending, ties broken by doc id descending
(``strcmp`` order, compared as UTF-8 bytes), whatever order the pairs came in; without scores
the list's own order is the ranking. ``qrels`` maps doc ids to integer grades: a grade of 1 or
more is relevant (trec_eval's relevance level 1), anything else (0, negative, or a document not
judged) is not. ``k`` (None: the whole ranking) keeps the first k documents.

Each function returns a float in [0, 1]; a query with no relevant document scores 0 everywhere,
as in trec_eval.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

Ranking = Sequence["tuple[str, float | None] | str"]


def ranked(ranking: Ranking) -> list[str]:
    """The doc ids in trec_eval's order."""
    pairs = [(item, None) if isinstance(item, str) else (item[0], item[1]) for item in ranking]
    if all(score is None for _, score in pairs):
        return [doc for doc, _ in pairs]
    if any(score is None for _, score in pairs):
        raise ValueError("either every retrieved document has a score or none has")
    from evalyard import ranked_passages  # the one ordering rule, which the report's views follow too

    return [p["id"] for p in ranked_passages([{"id": doc, "score": score} for doc, score in pairs])]


def _cut(docs: list[str], k: int | None) -> list[str]:
    return docs if k is None else docs[:k]


def relevant_count(qrels: Mapping[str, int]) -> int:
    return sum(1 for grade in qrels.values() if grade >= 1)


def hits(docs: list[str], qrels: Mapping[str, int]) -> list[bool]:
    return [qrels.get(doc, 0) >= 1 for doc in docs]


def precision(docs: list[str], qrels: Mapping[str, int], k: int | None = None) -> float:
    """P@k: relevant documents in the first k over k (over the ranking's length without k)."""
    if k is None:
        return sum(hits(docs, qrels)) / len(docs) if docs and relevant_count(qrels) else 0.0
    return sum(hits(_cut(docs, k), qrels)) / k if relevant_count(qrels) else 0.0


def recall(docs: list[str], qrels: Mapping[str, int], k: int | None = None) -> float:
    total = relevant_count(qrels)
    return sum(hits(_cut(docs, k), qrels)) / total if total else 0.0


def hit_rate(docs: list[str], qrels: Mapping[str, int], k: int | None = None) -> float:
    """trec_eval's success@k: 1 when a relevant document is in the first k."""
    return 1.0 if any(hits(_cut(docs, k), qrels)) else 0.0


def reciprocal_rank(docs: list[str], qrels: Mapping[str, int], k: int | None = None) -> float:
    for rank, hit in enumerate(hits(_cut(docs, k), qrels), start=1):
        if hit:
            return 1.0 / rank
    return 0.0


def average_precision(docs: list[str], qrels: Mapping[str, int], k: int | None = None) -> float:
    """AP (trec_eval's map, map_cut@k): the precision at each relevant document's rank, summed,
    over every relevant document judged (retrieved or not)."""
    total = relevant_count(qrels)
    if not total:
        return 0.0
    found, summed = 0, 0.0
    for rank, hit in enumerate(hits(_cut(docs, k), qrels), start=1):
        if hit:
            found += 1
            summed += found / rank
    return summed / total


def r_precision(docs: list[str], qrels: Mapping[str, int], k: int | None = None) -> float:
    """Precision at R, the number of relevant documents (``k`` is not used: R is the cut)."""
    total = relevant_count(qrels)
    return sum(hits(docs[:total], qrels)) / total if total else 0.0


def ndcg(docs: list[str], qrels: Mapping[str, int], k: int | None = None) -> float:
    """trec_eval's ndcg (and ndcg_cut@k): gain = the grade (non-positive grades gain nothing),
    discount log2(rank + 1); the ideal ranks every judged document by grade, cut at k too."""
    dcg = sum(_gain(qrels.get(doc, 0)) / math.log2(rank + 1) for rank, doc in enumerate(_cut(docs, k), start=1))
    ideal_gains = sorted((_gain(g) for g in qrels.values()), reverse=True)
    ideal = sum(g / math.log2(rank + 1) for rank, g in enumerate(_cut(ideal_gains, k), start=1) if g > 0)
    return dcg / ideal if ideal > 0 else 0.0


def _gain(grade: int) -> float:
    return float(grade) if grade > 0 else 0.0


#: name -> (function, whether k changes it)
MEASURES = {
    "hit_rate": hit_rate,
    "precision": precision,
    "recall": recall,
    "r_precision": r_precision,
    "mrr": reciprocal_rank,
    "map": average_precision,
    "ndcg": ndcg,
}
