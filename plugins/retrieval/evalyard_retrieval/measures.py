"""Retrieval measures as trec_eval defines them, on one query.

A ranking is a list of ``(doc_id, score)`` pairs, or of doc ids with no score. With scores, the
ranking is put in trec_eval's order first: score descending, ties broken by doc id descending
(``strcmp`` order, compared as UTF-8 bytes), whatever order the pairs came in; without scores
the list's own order is the ranking. ``qrels`` maps doc ids to integer grades: a grade of 1 or
more is relevant (trec_eval's relevance level 1), anything else (0, negative, or a document not
judged) is not. ``k`` (None: the whole ranking) keeps the first k documents.

Each measure is worked out from a ``Judgement``: one pass over the ranking that keeps where the
relevant documents are, so every measure at every cutoff of one query reads a few ranks instead
of the whole ranking again. Each returns a float in [0, 1]; a query with no relevant document
scores 0 everywhere, as in trec_eval.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from typing import Callable, Mapping, Sequence

from evalyard import ranked_passages

Ranking = Sequence["tuple[str, float | None] | str"]


def ranked(ranking: Ranking) -> list[str]:
    """The doc ids in trec_eval's order."""
    pairs = [(item, None) if isinstance(item, str) else (item[0], item[1]) for item in ranking]
    if all(score is None for _, score in pairs):
        return [doc for doc, _ in pairs]
    if any(score is None for _, score in pairs):
        raise ValueError("either every retrieved document has a score or none has")
    return ranked_ids([{"id": doc, "score": score} for doc, score in pairs])


def ranked_ids(passages: Sequence[Mapping]) -> list[str]:
    """The ids of retrieved passages (``{id, score}``, or ``{id}`` without scores) in trec_eval's order."""
    scores = [p.get("score") for p in passages]
    if None not in scores:  # the one ordering rule, which the report's views follow too
        return [p["id"] for p in ranked_passages(list(passages))] if passages else []
    if scores.count(None) < len(scores):
        raise ValueError("either every retrieved document has a score or none has")
    return [p["id"] for p in passages]


def _gain(grade: int) -> float:
    return float(grade) if grade > 0 else 0.0


class Judgement:
    """One ranking read against one query's qrels, once: the ranks (from 1, ascending) of the
    relevant documents it retrieved, the gains at the ranks of documents with a positive grade,
    R (the relevant documents judged, retrieved or not) and the ideal gains (descending)."""

    __slots__ = ("length", "total", "ranks", "gained", "ideal")

    def __init__(self, docs: Sequence[str], qrels: Mapping[str, int]) -> None:
        grade_of = qrels.get
        ranks, gained = [], []
        for rank, doc in enumerate(docs, start=1):
            grade = grade_of(doc, 0)
            if grade > 0:
                gained.append((rank, _gain(grade)))
                if grade >= 1:
                    ranks.append(rank)
        self.length = len(docs)
        self.total = sum(1 for grade in qrels.values() if grade >= 1)
        self.ranks = ranks
        self.gained = gained
        self.ideal = [g for g in sorted((_gain(g) for g in qrels.values()), reverse=True) if g > 0]

    def found(self, k: int | None) -> int:
        """Relevant documents in the first k (in the whole ranking without k)."""
        return len(self.ranks) if k is None else bisect_right(self.ranks, k)

    def relevant_ranks(self, k: int | None) -> list[int]:
        return self.ranks if k is None else self.ranks[:self.found(k)]

    def precision(self, k: int | None = None) -> float:
        """P@k: relevant documents in the first k over k (over the ranking's length without k)."""
        if not self.total:
            return 0.0
        if k is None:
            return self.found(None) / self.length if self.length else 0.0
        return self.found(k) / k

    def recall(self, k: int | None = None) -> float:
        return self.found(k) / self.total if self.total else 0.0

    def hit_rate(self, k: int | None = None) -> float:
        """trec_eval's success@k: 1 when a relevant document is in the first k."""
        return 1.0 if self.found(k) else 0.0

    def reciprocal_rank(self, k: int | None = None) -> float:
        if self.ranks and (k is None or self.ranks[0] <= k):
            return 1.0 / self.ranks[0]
        return 0.0

    def average_precision(self, k: int | None = None) -> float:
        """AP (trec_eval's map, map_cut@k): the precision at each relevant document's rank, summed,
        over every relevant document judged (retrieved or not)."""
        if not self.total:
            return 0.0
        summed = 0.0
        for found, rank in enumerate(self.relevant_ranks(k), start=1):
            summed += found / rank
        return summed / self.total

    def r_precision(self, k: int | None = None) -> float:
        """Precision at R, the number of relevant documents (``k`` is not used: R is the cut)."""
        return self.found(self.total) / self.total if self.total else 0.0

    def ndcg(self, k: int | None = None) -> float:
        """trec_eval's ndcg (and ndcg_cut@k): gain = the grade (non-positive grades gain nothing),
        discount log2(rank + 1); the ideal ranks every judged document by grade, cut at k too."""
        dcg = sum(gain / math.log2(rank + 1) for rank, gain in self.gained if k is None or rank <= k)
        ideal_gains = self.ideal if k is None else self.ideal[:k]
        ideal = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal_gains, start=1))
        return dcg / ideal if ideal > 0 else 0.0


def _on_ranking(judged: Callable[[Judgement, int | None], float]) -> Callable[..., float]:
    """The measure as a function of a ranking in trec_eval's order, the qrels and k."""
    def measure(docs: list[str], qrels: Mapping[str, int], k: int | None = None) -> float:
        return judged(Judgement(docs, qrels), k)

    measure.__name__, measure.__doc__ = judged.__name__, judged.__doc__
    return measure


hit_rate = _on_ranking(Judgement.hit_rate)
precision = _on_ranking(Judgement.precision)
recall = _on_ranking(Judgement.recall)
reciprocal_rank = _on_ranking(Judgement.reciprocal_rank)
average_precision = _on_ranking(Judgement.average_precision)
r_precision = _on_ranking(Judgement.r_precision)
ndcg = _on_ranking(Judgement.ndcg)

#: name -> the measure of a ranking: ``MEASURES[name](docs, qrels, k)``
MEASURES = {
    "hit_rate": hit_rate,
    "precision": precision,
    "recall": recall,
    "r_precision": r_precision,
    "mrr": reciprocal_rank,
    "map": average_precision,
    "ndcg": ndcg,
}
#: name -> the measure of a ``Judgement``: ``JUDGED[name](judgement, k)``
JUDGED = {
    "hit_rate": Judgement.hit_rate,
    "precision": Judgement.precision,
    "recall": Judgement.recall,
    "r_precision": Judgement.r_precision,
    "mrr": Judgement.reciprocal_rank,
    "map": Judgement.average_precision,
    "ndcg": Judgement.ndcg,
}
