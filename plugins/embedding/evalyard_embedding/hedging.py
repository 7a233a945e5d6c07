"""The ``hedging_language`` scorer: how close a candidate comes to known hedging phrases.

Arthur Bench compared each answer with a single "as an AI language model, I
don't have opinions" sentence. Hedging takes many more forms (uncertainty,
refusal to commit, deferral to experts, stale-knowledge disclaimers), so the
default list below covers each of them, and users can replace it.

By default every sentence and clause of the candidate is compared with every
phrase and the value is the maximum: "I'm not sure, but" in front of a long,
otherwise confident answer still counts, where a whole-text comparison would
dilute it away.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from evalyard import Case, Score

from .base import EmbeddingScorer, ModelOptions, is_blank
from .models import BUNDLED_DEFAULT_LAYER, is_bundled

#: Written for this plugin; grouped by the kind of hedge they stand for. Short,
#: with few topic words: sentence embeddings are dominated by content words, so
#: a phrase about "the answer" would also match confident answers.
DEFAULT_HEDGE_PHRASES: tuple[str, ...] = (
    # uncertainty about the answer itself
    "I'm not sure.",
    "I don't know.",
    "I might be wrong.",
    "I could be mistaken about this.",
    "This is just my best guess.",
    "It is hard to say for certain.",
    "I can't say for certain.",
    "Maybe, maybe not.",
    "It's possible, but I can't be sure.",
    # declining to commit
    "I cannot give a definitive answer.",
    "There is no simple answer to this question.",
    "It depends on many different factors.",
    "Opinions differ and there is no clear consensus.",
    "I would rather not speculate.",
    "Nobody can predict that.",
    # limits of the assistant
    "As an AI, I do not have personal opinions or feelings.",
    "I am only an AI language model.",
    "I don't have enough information to answer.",
    "I don't have access to real-time information.",
    "My knowledge may be out of date.",
    "I am unable to verify this.",
    # deferral to someone else
    "You should consult a qualified professional.",
    "You may want to ask an expert, such as a doctor or a lawyer.",
    "Please double-check this with a reliable source.",
)

#: Sentence ends: ., ! or ? followed by space, and line breaks.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")
#: Clause breaks inside a sentence: , ; : followed by space, and spaced dashes.
_CLAUSE_BREAK = re.compile(r"(?<=[,;:])\s+|\s+[-\u2013\u2014]\s+")
#: The matched text is echoed in details; long ones are cut to keep rows small.
_DETAIL_CHARS = 300


def split_sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_BREAK.split(text) if part.strip()]


def text_units(text: str, granularity: str) -> list[str]:
    """The pieces of ``text`` compared with the phrases.

    ``clause``: every sentence and, for sentences with several clauses, each
    clause too: "I'm not entirely sure, but I think it is Tuesday" is judged
    on "I'm not entirely sure," as well, which the whole sentence hides.
    """
    if granularity == "text":
        return [text.strip()]
    sentences = split_sentences(text)
    if granularity == "sentence":
        return sentences
    units = list(sentences)
    for sentence in sentences:
        clauses = [part.strip() for part in _CLAUSE_BREAK.split(sentence) if part.strip()]
        if len(clauses) > 1:
            units.extend(clauses)
    return list(dict.fromkeys(units))


class HedgingLanguage(EmbeddingScorer):
    name = "hedging_language"
    description = (
        "similarity of the candidate to hedging phrases (maximum over a configurable list and over the "
        "candidate's sentences and clauses); labels 'hedging' / 'not hedging' by threshold"
    )
    requires = ("candidate",)
    version = "1"
    higher_is_better = False  # more hedging is worse
    labels = ("hedging", "not hedging")
    # The label line is the config's hedge_threshold and `passed` follows the label; a pass
    # threshold set by the user (the platform's `threshold`) overrides `passed` only.
    renamed_options = {"batch_size": "encode_batch_size", "threshold": "hedge_threshold"}

    @dataclass
    class Config(ModelOptions):
        phrases: list[str] = field(
            default_factory=lambda: list(DEFAULT_HEDGE_PHRASES),
            metadata={"help": "hedging phrases to compare with ('|'-separated on the command line)"},
        )
        hedge_threshold: float = field(
            default=0.45,
            metadata={"help": "label 'hedging' at or above this similarity (set for the default model and measure)"},
        )
        granularity: Literal["clause", "sentence", "text"] = field(
            default="clause",
            metadata={
                "help": "what of the candidate is compared with the phrases (maximum taken): its sentences "
                "and clauses, its sentences, or the whole text"
            },
        )
        similarity: Literal["cosine", "bertscore_f1"] = field(
            default="cosine",
            metadata={
                "help": "cosine of sentence embeddings, or BERTScore F1 (Arthur Bench's measure; its "
                "values spread differently, so choose hedge_threshold for it)"
            },
        )
        layer: int | None = field(
            default=None,
            metadata={"help": "layer for similarity=bertscore_f1; default: 6 for the bundled model"},
        )

        def __post_init__(self) -> None:
            super().__post_init__()
            self.phrases = [p.strip() for p in self.phrases if p.strip()]
            if not self.phrases:
                raise ValueError("phrases must contain at least one non-empty phrase")

    config: Config

    def score_batch(self, cases: list[Case]) -> list[Score]:
        results: list[Score | None] = [None] * len(cases)
        units_of: dict[int, list[str]] = {}
        for index, case in enumerate(cases):
            if case.candidate is None:
                results[index] = Score.failure("hedging_language needs a candidate")
            elif is_blank(case.candidate):
                # Nothing was said, so nothing was hedged.
                results[index] = self._verdict(0.0, {"empty_candidate": True})
            else:
                units_of[index] = text_units(case.candidate, self.config.granularity)
        if units_of:
            units = list(dict.fromkeys(u for per_case in units_of.values() for u in per_case))
            try:
                best = self._best_matches(units)
            except Exception as exc:  # model missing or unloadable: every case fails alike
                best = None
                for index in units_of:
                    results[index] = Score.failure(exc)
            if best is not None:
                for index, case_units in units_of.items():
                    value, unit, phrase = max((best[u][0], u, best[u][1]) for u in case_units)
                    details = {"phrase": phrase}
                    if self.config.granularity != "text":
                        details["matched_text"] = unit[:_DETAIL_CHARS]
                    results[index] = self._verdict(value, details)
        return results  # type: ignore[return-value]  # every slot is filled above

    def _verdict(self, value: float, details: dict) -> Score:
        hedging = value >= self.config.hedge_threshold
        return Score(value=value, label="hedging" if hedging else "not hedging", passed=not hedging, details=details)

    def _best_matches(self, units: list[str]) -> dict[str, tuple[float, str]]:
        """For each text unit: the highest similarity to any phrase, and that phrase."""
        if self.config.similarity == "bertscore_f1":
            matrix = self._bertscore_matrix(units)
        else:
            matrix = self._cosine_matrix(units)
        values, positions = matrix.max(dim=1)
        phrases = self.config.phrases
        return {
            unit: (float(value), phrases[int(position)])
            for unit, value, position in zip(units, values.tolist(), positions.tolist())
        }

    def _cosine_matrix(self, units: list[str]):
        import torch

        from .encoding import sentence_embeddings

        loaded = self.loaded_model()
        # Phrases are embedded once per process: later batches hit the cache.
        vectors = sentence_embeddings(loaded, list(self.config.phrases) + units, self.config.encode_batch_size)
        phrase_matrix = torch.stack([vectors[p] for p in self.config.phrases])
        unit_matrix = torch.stack([vectors[u] for u in units])
        return (unit_matrix @ phrase_matrix.T).clamp(-1.0, 1.0)

    def _bertscore_matrix(self, units: list[str]):
        from .encoding import token_embeddings
        from .matching import precision_recall_f1

        loaded = self.loaded_model()
        layer = self.config.layer
        if layer is None:
            if not is_bundled(self.config.model):
                raise ValueError("hedging_language: set layer for similarity=bertscore_f1 with this model")
            layer = BUNDLED_DEFAULT_LAYER
        phrases = self.config.phrases
        embedded = token_embeddings(loaded, list(phrases) + units, layer, self.config.encode_batch_size)
        pairs = [(embedded[phrase], embedded[unit]) for unit in units for phrase in phrases]
        f1 = precision_recall_f1(pairs, loaded.special_token_ids, None, self.config.encode_batch_size)[:, 2]
        return f1.view(len(units), len(phrases))
