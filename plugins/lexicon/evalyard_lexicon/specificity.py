"""``specificity``: how specific (vs vague) the candidate's language is, in [0, 1].

Three components, reported in ``details`` with the counts behind them:

- **V** (vagueness): with ``n`` words (as ``lexicon_count`` counts them) of which
  ``counter`` are vague words, ``p = (n - counter) / n`` and
  ``V = max(0, p / 0.2 - 4)``: 1 with no vague word, 0 once a fifth of the words
  are vague.
- **F** (rarity): mean ``wordfreq`` frequency of the words, each capped at 0.001
  (``wf``); ``F = clip(2 - wf / 0.0004, 0, 1)``: common everyday words give 0.
- **P** (proper nouns and numbers): with ``pn`` such tokens, ``P = min(1, 5 pn / n)``.

Corrected mode (default): value = (V + F + P) / 3; a vague word counts only as a
whole word (after punctuation removal, so "sure," counts and "ensure" does not),
each of the 22 words once; ``pn`` comes from the heuristic in
:mod:`.proper_nouns` (no NLTK). A text without words (empty, whitespace,
punctuation or emoji only) says nothing specific: value 0.0, components None,
and ``details["reason"]`` explains.

``arthur_compat=True`` reproduces Arthur Bench 0.3.1: substring counting over a
23-entry list ("most" twice, so "almost" counts three times), weights 0.33 (max
0.99), ``pn`` = NNP + CD tags from ``nltk.pos_tag(nltk.word_tokenize(text))``, and
a ZeroDivisionError (a recorded error) for texts without words. Without NLTK's
tagger data, P uses the heuristic and ``details["approximated"] == ["P"]``.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalyard import Case, Score, Scorer

from . import nltk_support
from .common import arthur_compat_field, missing_field
from .proper_nouns import count_proper_nouns_and_numbers
from .textcounts import lexicon_count, remove_punctuation

if TYPE_CHECKING:
    from evalyard import Runtime

#: Arthur Bench's list, in its order, duplicate included (compat counting uses it as is).
ARTHUR_VAGUE_WORDS = (
    "around", "about", "almost", "basically", "approximately", "nearly", "roughly", "some",
    "most", "least", "good", "bad", "nice", "great", "may", "could", "certain", "most",
    "might", "usually", "typically", "like", "sure",
)  # fmt: skip
VAGUE_WORDS = frozenset(ARTHUR_VAGUE_WORDS)

_FREQUENCY_PUNCTUATION = re.compile(r"[^\w\s'/]")  # keeps apostrophes; "/" separates words
_FREQUENCY_CAP = 0.001
_MAX_CACHED_WORDS = 500_000
_NO_WORDS = (
    "no words (empty, whitespace, punctuation or emoji only): nothing specific is said, "
    "so the score is 0.0 and the components are undefined"
)


class _WordFrequencies:
    """``wordfreq.word_frequency(word, "en")`` with a per-word cache.

    wordfreq re-tokenises and normalises its argument on every call (~10 us), and
    natural text repeats words constantly, so caching by the raw token pays off.
    """

    def __init__(self) -> None:
        self._cache: dict[str, float] = {}
        self._lookup = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._lookup is None:
                from wordfreq import word_frequency  # import reads data: defer to first use

                self._lookup = word_frequency
        return self._lookup

    def capped_mean(self, tokens: list[str]) -> float:
        """Mean of the capped frequencies, summed in order (as Arthur Bench did); 0.001 if none."""
        if not tokens:
            return _FREQUENCY_CAP
        cache = self._cache
        lookup = self._lookup or self._load()
        total = 0.0
        for token in tokens:
            frequency = cache.get(token)
            if frequency is None:
                frequency = lookup(token, "en")
                if frequency > _FREQUENCY_CAP:
                    frequency = _FREQUENCY_CAP
                if len(cache) >= _MAX_CACHED_WORDS:
                    cache.clear()
                cache[token] = frequency
            total += frequency
        return total / len(tokens)


WORD_FREQUENCIES = _WordFrequencies()


def rarity(text: str) -> tuple[float, float]:
    """``(F, wf)``: the rarity component and the capped mean word frequency."""
    tokens = _FREQUENCY_PUNCTUATION.sub("", text).replace("/", " ").split()
    wf = WORD_FREQUENCIES.capped_mean(tokens)
    return min(1.0, max(0.0, 2.0 - wf / 0.0004)), wf


class Specificity(Scorer):
    name = "specificity"
    description = (
        "How specific the candidate's language is (0-1): few vague words, rare words, "
        "proper nouns and numbers."
    )
    requires = ("candidate",)

    @dataclass
    class Config:
        arthur_compat: bool = arthur_compat_field(
            "substring vague-word counting with 'most' listed twice, weights 0.33, NLTK NNP+CD tags "
            "for P (a heuristic, flagged as approximated, without NLTK data), and ZeroDivisionError "
            "for texts without words"
        )

    def __init__(self, config: Any = None, **options: Any) -> None:
        super().__init__(config, **options)
        self._tagger_resolved = False
        self._tagger: nltk_support.PosTagger | None = None
        self._approximation: dict[str, Any] = {}
        self.nltk_data: list[str] = []

    def setup(self, runtime: Runtime) -> None:
        if runtime is not None:  # set up by hand: NLTK's own folders
            self.nltk_data = list(runtime.setting("lexicon.nltk_data") or [])

    def _resolve_tagger(self) -> None:
        # On first use, not in __init__: default mode never imports NLTK.
        if not self._tagger_resolved:
            if self.config.arthur_compat:
                self._tagger, reason = nltk_support.load_pos_tagger(self.nltk_data)
                if self._tagger is None:
                    self._approximation = {
                        "approximated": ["P"],
                        "approximation_reason": f"{reason}; proper nouns and numbers counted with "
                        "evalyard's heuristic instead of NLTK's NNP+CD tags",
                    }
            self._tagger_resolved = True

    def score(self, case: Case) -> Score:
        text = case.candidate
        if text is None:
            return missing_field(self.name, "candidate")
        self._resolve_tagger()
        return self._score_compat(text) if self.config.arthur_compat else self._score_corrected(text)

    # -- corrected mode ----------------------------------------------------
    def _score_corrected(self, text: str) -> Score:
        tokens = remove_punctuation(text).lower().split()
        n = len(tokens)
        if n == 0:
            details = {"V": None, "F": None, "P": None, "n": 0, "counter": 0, "pn": 0, "reason": _NO_WORDS}
            return Score(value=0.0, details=details)
        # strip("'"): textstat keeps an apostrophe before t/s/d ("'some'" -> "'some").
        counter = sum(1 for token in tokens if token in VAGUE_WORDS or token.strip("'") in VAGUE_WORDS)
        vague = max(0.0, ((n - counter) / n) / 0.2 - 4.0)
        rare, wf = rarity(text)
        pn = count_proper_nouns_and_numbers(text)
        proper = min(1.0, 5.0 * pn / n)
        details = {"V": vague, "F": rare, "P": proper, "n": n, "counter": counter, "pn": pn, "wf": wf}
        return Score(value=(vague + rare + proper) / 3.0, details=details)

    # -- Arthur Bench 0.3.1 ------------------------------------------------
    def _score_compat(self, text: str) -> Score:
        # Same operations in the same order as 0.3.1, so floats match bit for bit.
        lowered = text.lower()
        counter = 0
        for word in ARTHUR_VAGUE_WORDS:
            counter += lowered.count(word)
        n_lowered = lexicon_count(lowered)
        rare, wf = rarity(text)
        if self._tagger is not None:
            tags = self._tagger.tags(text)
            pn = sum(1 for _, tag in tags if tag == "NNP" or tag == "CD")
            extra: dict[str, Any] = {"tokens": len(tags)}
        else:
            pn = count_proper_nouns_and_numbers(text)
            extra = dict(self._approximation)
        n = lexicon_count(text)
        details = {"n": n, "counter": counter, "pn": pn, "wf": wf, **extra}
        if n_lowered == 0 or n == 0:
            # 0.3.1 divided by the word count in V (and again in P): its exception
            # becomes this case's recorded error; F was still computable.
            details.update(V=None, F=rare, P=None)
            return Score.failure(ZeroDivisionError("division by zero"), **details)
        non_vague = (n_lowered - counter) / n_lowered
        vague = max(0.0, (non_vague / 0.2) - 4.0)
        proper = min(1.0, 5.0 * (pn / n))
        details.update(V=vague, F=rare, P=proper)
        value = (0.33 * vague) + (0.33 * rare) + (0.33 * proper)
        return Score(value=value, details=details)
