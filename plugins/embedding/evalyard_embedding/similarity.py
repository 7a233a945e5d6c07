"""The ``semantic_similarity`` scorer: cosine similarity of sentence embeddings."""

from __future__ import annotations

from dataclasses import dataclass

from evalyard import Case, Score

from .base import EmbeddingScorer, ModelOptions, is_blank


class SemanticSimilarity(EmbeddingScorer):
    name = "semantic_similarity"
    description = (
        "cosine similarity of the sentence embeddings (mean pooling, L2 norm) of candidate and reference"
    )
    requires = ("reference", "candidate")
    version = "1"
    higher_is_better = True

    @dataclass
    class Config(ModelOptions):
        pass

    def score_batch(self, cases: list[Case]) -> list[Score]:
        results: list[Score | None] = [None] * len(cases)
        todo: list[int] = []
        for index, case in enumerate(cases):
            if case.reference is None or case.candidate is None:
                results[index] = Score.failure("semantic_similarity needs both a reference and a candidate")
            elif is_blank(case.reference):
                results[index] = Score.failure("reference is empty: nothing to compare the candidate with")
            elif is_blank(case.candidate):
                # An empty answer shares no meaning with the reference; the embedding
                # of an empty string would give an arbitrary cosine instead.
                results[index] = Score(value=0.0, details={"empty_candidate": True})
            else:
                todo.append(index)
        if todo:
            try:
                values = self._cosines([cases[i] for i in todo])
                scores = [Score(value=value) for value in values]
            except Exception as exc:  # model missing or unloadable: every case fails alike
                scores = [Score.failure(exc) for _ in todo]
            for index, score in zip(todo, scores):
                results[index] = score
        return results  # type: ignore[return-value]  # every slot is filled above

    def _cosines(self, cases: list[Case]) -> list[float]:
        from .encoding import sentence_embeddings

        loaded = self.loaded_model()
        vectors = sentence_embeddings(
            loaded, [c.reference for c in cases] + [c.candidate for c in cases], self.config.encode_batch_size
        )
        # Vectors are unit length, so the dot product is the cosine; clamp float
        # rounding (identical texts can give 1.0000001).
        return [
            max(-1.0, min(1.0, float(vectors[c.reference] @ vectors[c.candidate]))) for c in cases
        ]
