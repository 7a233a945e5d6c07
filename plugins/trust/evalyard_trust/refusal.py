"""Refusal detection: is a response the model declining to answer?

The default detector is trust-eval's: ``partial_ratio(normalize(phrase), normalize(output)) > 85``
with fuzzywuzzy 0.18's best-substring ratio as python-Levenshtein computes it (rebuilt here on
rapidfuzz's primitives, which python-Levenshtein itself wraps, so the integer ratios are the
same). Other detectors plug in through the trust plugin's hook ``register_refusal_detectors``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .text import normalize

if TYPE_CHECKING:
    from evalyard import Runtime

REFUSAL_PHRASE = "I apologize, but I couldn't find an answer"
REFUSAL_THRESHOLD = 85.0


def fuzzywuzzy_partial_ratio(s1: str, s2: str) -> int:
    """fuzzywuzzy 0.18 ``fuzz.partial_ratio`` (with python-Levenshtein): the best ratio of the
    shorter string against windows of the longer one that start at a matching block, 0-100."""
    from rapidfuzz.distance import Indel, Levenshtein

    if s1 == s2:
        return 100
    if not s1 or not s2:
        return 0
    shorter, longer = (s1, s2) if len(s1) <= len(s2) else (s2, s1)
    best = 0.0
    for block in Levenshtein.opcodes(shorter, longer).as_matching_blocks():
        start = max(block.b - block.a, 0)
        ratio = Indel.normalized_similarity(shorter, longer[start:start + len(shorter)])
        if ratio > 0.995:
            return 100
        best = max(best, ratio)
    return int(round(100 * best))


@dataclass
class RefusalVerdict:
    refused: bool
    details: dict[str, Any] = field(default_factory=dict)


class FuzzyRefusal:
    """Fuzzy match against one or more refusal phrases (trust-eval: one phrase, threshold 85)."""

    name = "fuzzy"

    def __init__(self, phrases: list[str], threshold: float = REFUSAL_THRESHOLD, exact: bool = True) -> None:
        self.phrases = list(phrases)
        self.threshold = threshold
        self.exact = exact  # fuzzywuzzy's heuristic (compatible) or rapidfuzz's optimal alignment

    def ratio(self, phrase: str, output: str) -> float:
        if self.exact:
            return fuzzywuzzy_partial_ratio(normalize(phrase), normalize(output))
        from rapidfuzz import fuzz

        return fuzz.partial_ratio(normalize(phrase), normalize(output))

    def detect(self, output: str) -> RefusalVerdict:
        ratios = [self.ratio(phrase, output) for phrase in self.phrases]
        best = max(ratios)
        return RefusalVerdict(best > self.threshold, {"refusal_ratio": best, "refusal_threshold": self.threshold})


def fuzzy_detector(config: Any) -> FuzzyRefusal:
    return FuzzyRefusal([config.refusal_phrase, *config.refusal_phrases], config.refusal_threshold,
                        exact=not config.corrected)


def refusal_detector(name: str, config: Any, runtime: Runtime) -> Any:
    from .extensions import make

    return make("refusal detector", name, runtime, config)
