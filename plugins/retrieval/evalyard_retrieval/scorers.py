"""The retrieval scorers: one per measure, each at any cutoff (``-s recall:k=10``, or ``-s recall@10``).

A case's ranking is its ``retrieved`` passages (or its ``context``, ids by position) in trec_eval's
order (``measures.ranked``); its judgements are ``relevant``. A case that retrieved nothing
(``retrieved: []``) scores 0, as trec_eval scores an empty ranking; a case with neither
``retrieved`` nor ``context`` has no ranking at all, which is its error.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from evalyard import Case, Score, Scorer

from .measures import MEASURES, ranked


#: the last cases' rankings in trec_eval's order, by the identity of their ``retrieved`` list (kept
#: alive here, so an identity is not reused while cached): every measure and cutoff of a run asks
#: for the same case's order, and sorting it again for each was most of a retrieval run's time
_ORDERED: OrderedDict[int, tuple[list[Any], list[str]]] = OrderedDict()
_ORDERED_SIZE = 4096


def ordered(case: Case) -> list[str] | None:
    """The case's doc ids in trec_eval's order, or None when it has no ranking."""
    retrieved = case.retrieved
    if retrieved is None:
        return [str(n + 1) for n in range(len(case.context))] if case.context else None
    cached = _ORDERED.get(id(retrieved))
    if cached is not None and cached[0] is retrieved:
        return cached[1]
    docs = ranked([(p["id"], p["score"]) if "score" in p else p["id"] for p in retrieved])
    _ORDERED[id(retrieved)] = (retrieved, docs)
    while len(_ORDERED) > _ORDERED_SIZE:
        _ORDERED.popitem(last=False)
    return docs


class RetrievalScorer(Scorer):
    """A measure of the ranking against ``relevant``; subclasses name the measure."""

    measure = ""
    requires = ("relevant",)
    reads = ("retrieved", "context")  # the ranking: a pipeline's generated one replaces the data's
    higher_is_better = True
    batch_size = 1024

    @dataclass
    class Config:
        k: int | None = field(default=None, metadata={"help": "the cutoff: only the first k documents count "
                                                               "(default: the whole ranking)"})

        def __post_init__(self) -> None:
            if self.k is not None and self.k < 1:
                raise ValueError(f"k must be 1 or more, not {self.k}")

    def score(self, case: Case) -> Score:
        docs = ordered(case)
        if docs is None:
            return Score.failure(f"{self.name}: the case has no ranking (no `retrieved` and no `context`)")
        k = self.config.k
        value = MEASURES[self.measure](docs, case.relevant or {}, k)
        shown = docs if k is None else docs[:k]
        grades = case.relevant or {}
        return Score(value=value, details={
            "k": k, "retrieved": len(docs), "relevant": sum(1 for g in grades.values() if g >= 1),
            "relevant_ranks": [rank for rank, doc in enumerate(shown, start=1) if grades.get(doc, 0) >= 1][:100],
        })


def _scorer(measure: str, description: str) -> type[RetrievalScorer]:
    return type(measure.title().replace("_", ""), (RetrievalScorer,),
                {"name": measure, "measure": measure, "description": description, "__module__": __name__})


SCORERS = (
    _scorer("hit_rate", "1 when a relevant document is in the first k (trec_eval's success@k)"),
    _scorer("precision", "relevant documents in the first k, over k (trec_eval's P@k; set_P without k)"),
    _scorer("recall", "relevant documents in the first k, over all relevant documents (trec_eval's recall@k)"),
    _scorer("r_precision", "precision at R, the number of relevant documents (trec_eval's Rprec)"),
    _scorer("mrr", "1 / the rank of the first relevant document in the first k (trec_eval's recip_rank)"),
    _scorer("map", "average precision, over all relevant documents (trec_eval's map; map_cut@k)"),
    _scorer("ndcg", "normalised discounted cumulative gain with graded relevance (trec_eval's ndcg; ndcg_cut@k)"),
)

