"""Ragas' context precision and recall without a model: by ids, or by string similarity.

- ``id_based_context_precision``: the share of the retrieved ids (as a set) that are relevant;
  ``id_based_context_recall``: the share of the relevant ids (a set) that were retrieved. Relevant
  ids are ``relevant``'s with a grade of 1 or more.
- ``non_llm_context_precision``: each retrieved passage, in rank order, is a hit when its best
  similarity to a reference passage (``reference_contexts``) reaches ``similarity`` (Ragas' ``threshold``, 0.5); the value is
  the average precision over the hits (Ragas' formula: the precision at each hit's rank, summed,
  over the number of hits). ``non_llm_context_recall``: the share of reference passages whose best
  similarity to a retrieved passage is *above* it (Ragas 0.4.3 compares with >= in
  precision and > in recall; kept, so the figures match).
- Similarity is 1 - the normalised string distance (rapidfuzz, as Ragas uses): Levenshtein by
  default, or Hamming, Jaro, Jaro-Winkler.

Where Ragas returns NaN (nothing retrieved for the id-based precision, nothing relevant for a
recall) or fails (no reference passage, nothing retrieved for the string-based recall), the case's
score is an error saying why: never NaN, never 0. Ragas divides the average precision by the hits
plus 1e-10; evalyard divides by the hits, so its figures are Ragas' to within 1e-9.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evalyard import Case, Score, Scorer, ranked_passages

DISTANCES = ("levenshtein", "hamming", "jaro", "jaro_winkler")


def _ranked_passages(case: Case) -> list[dict[str, Any]] | None:
    if case.retrieved is not None:
        return ranked_passages(case.retrieved)
    if case.context:
        return [{"id": str(n + 1), "text": text} for n, text in enumerate(case.context)]
    return None


def _relevant_ids(case: Case) -> set[str]:
    return {doc for doc, grade in (case.relevant or {}).items() if grade >= 1}


class IdBasedContextPrecision(Scorer):
    name = "id_based_context_precision"
    description = "share of the retrieved ids that are relevant (Ragas' IDBasedContextPrecision)"
    requires = ("relevant",)
    reads = ("retrieved", "context")  # the ranking: a pipeline's generated one replaces the data's
    batch_size = 1024

    def score(self, case: Case) -> Score:
        passages = _ranked_passages(case)
        if not passages:
            return Score.failure(f"{self.name}: nothing was retrieved, so no share of it can be relevant")
        retrieved = {p["id"] for p in passages}
        hits = len(retrieved & _relevant_ids(case))
        return Score(value=hits / len(retrieved), details={"retrieved": len(retrieved), "relevant_retrieved": hits})


class IdBasedContextRecall(Scorer):
    name = "id_based_context_recall"
    description = "share of the relevant ids that were retrieved (Ragas' IDBasedContextRecall)"
    requires = ("relevant",)
    reads = ("retrieved", "context")  # the ranking: a pipeline's generated one replaces the data's
    batch_size = 1024

    def score(self, case: Case) -> Score:
        relevant = _relevant_ids(case)
        if not relevant:
            return Score.failure(f"{self.name}: no relevant id, so no share of them can be retrieved")
        retrieved = {p["id"] for p in _ranked_passages(case) or []}
        hits = len(relevant & retrieved)
        return Score(value=hits / len(relevant), details={"relevant": len(relevant), "relevant_retrieved": hits})


class _StringSimilarityScorer(Scorer):
    requires = ("reference_contexts",)
    reads = ("retrieved", "context")
    batch_size = 64

    @dataclass
    class Config:
        # not `threshold`: that is the platform's pass threshold on the score
        similarity: float = field(default=0.5, metadata={"help": "similarity a passage needs to count as a match "
                                                                "(Ragas' threshold)"})
        distance: str = field(default="levenshtein", metadata={"help": f"string distance: {', '.join(DISTANCES)}"})

        def __post_init__(self) -> None:
            if self.distance not in DISTANCES:
                raise ValueError(f"distance must be one of {', '.join(DISTANCES)}, not {self.distance!r}")

    def similarity(self, a: str, b: str) -> float:
        from rapidfuzz import distance

        measure = {"levenshtein": distance.Levenshtein, "hamming": distance.Hamming, "jaro": distance.Jaro,
                   "jaro_winkler": distance.JaroWinkler}[self.config.distance]
        return 1 - measure.normalized_distance(a, b)

    def texts(self, case: Case) -> list[str] | Score:
        passages = _ranked_passages(case)
        if passages is None:
            return Score.failure(f"{self.name}: the case has no retrieved passages (`retrieved` or `context`)")
        missing = [p["id"] for p in passages if p.get("text") is None]
        if missing:
            return Score.failure(f"{self.name}: retrieved passage {missing[0]!r} has no text to compare")
        return [p["text"] for p in passages]


class NonLlmContextPrecision(_StringSimilarityScorer):
    name = "non_llm_context_precision"
    description = ("average precision of the retrieved passages that match a reference passage by string "
                   "similarity (Ragas' NonLLMContextPrecisionWithReference)")

    def score(self, case: Case) -> Score:
        texts = self.texts(case)
        if isinstance(texts, Score):
            return texts
        references = case.reference_contexts or []
        if not texts:  # nothing retrieved: no precision to gain, 0 as for an empty ranking
            return Score(value=0.0, details={"verdicts": [], "verdicts_of": "retrieved", "similarities": []})
        if not references:
            return Score.failure(f"{self.name}: no reference passage to compare with")
        best = [max(self.similarity(text, ref) for ref in references) for text in texts]
        verdicts = [1 if s >= self.config.similarity else 0 for s in best]
        found, summed = 0, 0.0
        for rank, hit in enumerate(verdicts, start=1):
            if hit:
                found += 1
                summed += found / rank
        return Score(value=summed / found if found else 0.0,
                     details={"verdicts": verdicts, "verdicts_of": "retrieved",
                              "similarities": [round(s, 6) for s in best]})


class NonLlmContextRecall(_StringSimilarityScorer):
    name = "non_llm_context_recall"
    description = ("share of the reference passages matched by a retrieved passage by string similarity "
                   "(Ragas' NonLLMContextRecall)")

    def score(self, case: Case) -> Score:
        texts = self.texts(case)
        if isinstance(texts, Score):
            return texts
        references = case.reference_contexts or []
        if not references:
            return Score.failure(f"{self.name}: no reference passage, so no share of them can be found")
        if not texts:
            return Score.failure(f"{self.name}: nothing was retrieved to compare the reference passages with")
        best = [max(self.similarity(text, ref) for text in texts) for ref in references]
        verdicts = [1 if s > self.config.similarity else 0 for s in best]
        return Score(value=sum(verdicts) / len(verdicts),  # a verdict per reference passage, not per retrieved one
                     details={"verdicts": verdicts, "verdicts_of": "reference_contexts",
                              "similarities": [round(s, 6) for s in best]})


SCORERS = (IdBasedContextPrecision, IdBasedContextRecall, NonLlmContextPrecision, NonLlmContextRecall)
