"""``word_count_match``: how close the candidate's word count is to the reference's.

Words are counted as ``textstat.lexicon_count(text, removepunct=True)`` does
(:func:`.textcounts.lexicon_count`: whitespace-separated tokens with at least one
letter or digit; hyphenated words and contractions count once, emoji-only text
has no words).

score = max(0, (n_ref - |n_ref - n_cand|) / n_ref): 1.0 for equal counts, falling
linearly to 0.0 when the candidate is twice as long or empty. It is asymmetric on
purpose (Arthur Bench's definition): the reference sets the scale. When both texts
have no words the counts agree, so the score is 1.0; Arthur Bench 0.3.1 divided by
zero there, which ``arthur_compat`` reproduces as a recorded error.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalyard import Case, Score, Scorer

from .common import arthur_compat_field, missing_field
from .textcounts import lexicon_count


class WordCountMatch(Scorer):
    name = "word_count_match"
    description = "How close the candidate's word count is to the reference's: 1 - |difference| / reference count."
    requires = ("reference", "candidate")

    @dataclass
    class Config:
        arthur_compat: bool = arthur_compat_field(
            "two texts without words raise ZeroDivisionError (recorded as an error) instead of scoring 1.0"
        )

    def score(self, case: Case) -> Score:
        reference, candidate = case.reference, case.candidate
        if reference is None or candidate is None:
            return missing_field(self.name, "reference" if reference is None else "candidate")
        n_ref, n_cand = lexicon_count(reference), lexicon_count(candidate)
        details = {"reference_words": n_ref, "candidate_words": n_cand}
        delta = abs(n_ref - n_cand)
        if delta > n_ref:
            value = 0.0
        elif n_ref == 0:  # and so n_cand == 0
            if self.config.arthur_compat:
                return Score.failure(ZeroDivisionError("division by zero"), **details)
            value = 1.0
        else:
            value = (n_ref - delta) / n_ref
        return Score(value=value, details=details)
