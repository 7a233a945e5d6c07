"""The retrieval scorers: one per measure, each at any cutoff (``-s recall:k=10``, or ``-s recall@10``).

A case's ranking is its ``retrieved`` passages (or its ``context``, ids by position) in trec_eval's
order (``measures.ranked_ids``); its judgements are ``relevant``. A case that retrieved nothing
(``retrieved: []``) scores 0, as trec_eval scores an empty ranking; a case with neither
``retrieved`` nor ``context`` has no ranking at all, which is its error.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from evalyard import Case, Score, Scorer

from .measures import JUDGED, Judgement, ranked_ids


#: the last cases' rankings read against their judgements (``measures.Judgement``), by the identity
#: of their ``retrieved`` (or ``context``) list and ``relevant`` mapping (both kept alive here, so an
#: identity is not reused while cached): every measure and cutoff of a run asks about the same case,
#: and sorting and reading its ranking again for each was most of a retrieval run's time. The run's
#: scorers work on one window of cases (and the batches left open across it), which this size holds.
_JUDGED: OrderedDict[tuple[int, int], tuple[Any, Any, Judgement]] = OrderedDict()
_JUDGED_SIZE = 2048
_NOTHING_RELEVANT: Mapping[str, int] = MappingProxyType({})


def ordered(case: Case) -> list[str] | None:
    """The case's doc ids in trec_eval's order, or None when it has no ranking."""
    retrieved = case.retrieved
    if retrieved is None:
        return [str(n + 1) for n in range(len(case.context))] if case.context else None
    return ranked_ids(retrieved)


def judged(case: Case) -> Judgement | None:
    """The case's ranking (``ordered``) read against its ``relevant``, or None when it has no ranking."""
    ranking = case.retrieved if case.retrieved is not None else case.context
    relevant = case.relevant or _NOTHING_RELEVANT
    key = (id(ranking), id(relevant))
    cached = _JUDGED.get(key)
    if cached is not None and cached[0] is ranking and cached[1] is relevant:
        return cached[2]
    docs = ordered(case)
    if docs is None:
        return None
    judgement = Judgement(docs, relevant)
    _JUDGED[key] = (ranking, relevant, judgement)
    while len(_JUDGED) > _JUDGED_SIZE:
        _JUDGED.popitem(last=False)
    return judgement


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
        judgement = judged(case)
        if judgement is None:
            return Score.failure(f"{self.name}: the case has no ranking (no `retrieved` and no `context`)")
        k = self.config.k
        return Score(value=JUDGED[self.measure](judgement, k), details={
            "k": k, "retrieved": judgement.length, "relevant": judgement.total,
            "relevant_ranks": judgement.relevant_ranks(k)[:100],
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

