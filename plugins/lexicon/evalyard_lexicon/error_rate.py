"""``wer`` and ``cer``: word and character error rates of a transcript (the candidate) against
the reference, as jiwer 4.0 computes them, options included.

A text becomes tokens by jiwer's rules: the chosen normalisations in this order (lower case,
English contractions expanded, Kaldi non-words such as ``<unk>`` or ``[noise]`` removed, Unicode
punctuation removed, every whitespace character made a space), then for words runs of two or more
whitespace characters become one space, both ends are stripped and the text is split on spaces
(so a lone tab or newline stays inside a word, as in jiwer); for characters, both ends are
stripped and every character, spaces included, is a token. The edits are those of the
Levenshtein alignment that rapidfuzz gives (jiwer's), so hits, substitutions, deletions and
insertions are jiwer's own, not only their sum:

- WER (CER) = (S + D + I) / (H + S + D), the edits per reference token; above 1 when the
  transcript inserts more than the reference holds;
- with an empty reference, jiwer's rule: the value is the number of inserted tokens (0 for an
  empty transcript), not a rate; ``details.empty_reference`` says so;
- MER = (S + D + I) / (H + S + D + I), WIP = H/N_ref * H/N_hyp, WIL = 1 - WIP, in details.

The run's mean is the mean of the cases' rates; ``corpus_wer`` (``corpus_cer``) is jiwer's
rate over the whole run (every case's edits over every case's reference tokens), the figure
speech papers report.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

from evalyard import Case, Score, Scorer

from .common import PUNCTUATION_TABLE, missing_field

#: jiwer's ExpandCommonEnglishContractions, in its order
_CONTRACTIONS = ((r"won't", "will not"), (r"can\'t", "can not"), (r"let\'s", "let us"), (r"n\'t", " not"),
                 (r"\'re", " are"), (r"\'s", " is"), (r"\'d", " would"), (r"\'ll", " will"), (r"\'t", " not"),
                 (r"\'ve", " have"), (r"\'m", " am"))
_KALDI_NON_WORD = re.compile(r"[<\[][^>\]]*[>\]]")
_SPACE_RUN = re.compile(r"\s\s+")


def _expand(text: str) -> str:
    for pattern, replacement in _CONTRACTIONS:
        text = re.sub(pattern, replacement, text)
    return text


def _whitespace_to_space(text: str) -> str:
    for character in string.whitespace:
        text = text.replace(character, " ")
    return text


@dataclass(frozen=True)
class Counts:
    hits: int
    substitutions: int
    deletions: int
    insertions: int
    reference: int
    hypothesis: int

    @property
    def rate(self) -> float:
        if self.reference == 0:
            return float(self.insertions)
        return (self.substitutions + self.deletions + self.insertions) / self.reference

    def details(self, unit: str) -> dict[str, Any]:
        s, d, i, h = self.substitutions, self.deletions, self.insertions, self.hits
        out: dict[str, Any] = {"hits": h, "substitutions": s, "deletions": d, "insertions": i,
                               f"reference_{unit}": self.reference, f"hypothesis_{unit}": self.hypothesis}
        if self.reference == 0:
            out["empty_reference"] = True
            return out
        wip = (h / self.reference) * (h / self.hypothesis) if self.hypothesis else 0.0
        out.update(mer=(s + d + i) / (h + s + d + i), wip=wip, wil=1 - wip)
        return out


def align(reference: list[str], hypothesis: list[str]) -> Counts:
    """Hits, substitutions, deletions and insertions of the Levenshtein alignment (rapidfuzz's
    opcodes over the tokens mapped to integers, as jiwer does)."""
    from rapidfuzz.distance import Levenshtein

    ids: dict[str, int] = {}
    ref = [ids.setdefault(token, len(ids)) for token in reference]
    hyp = [ids.setdefault(token, len(ids)) for token in hypothesis]
    hits = subs = dels = ins = 0
    for tag, i1, i2, j1, j2 in Levenshtein.opcodes(ref, hyp):
        if tag == "equal":
            hits += i2 - i1
        elif tag == "replace":
            subs += i2 - i1
        elif tag == "delete":
            dels += i2 - i1
        elif tag == "insert":
            ins += j2 - j1
    return Counts(hits, subs, dels, ins, len(reference), len(hypothesis))


class _ErrorRate(Scorer):
    requires = ("reference", "candidate")
    higher_is_better = False
    unit: ClassVar[str] = "words"

    @dataclass
    class Config:
        lowercase: bool = field(default=False, metadata={"help": "Lower-case both texts first."})
        expand_contractions: bool = field(
            default=False, metadata={"help": "Expand common English contractions (won't -> will not), as jiwer."})
        remove_non_words: bool = field(
            default=False, metadata={"help": "Remove Kaldi non-words in <...> or [...] (<unk>, [noise])."})
        remove_punctuation: bool = field(default=False, metadata={"help": "Delete Unicode punctuation (P*)."})
        whitespace_to_space: bool = field(
            default=False, metadata={"help": "Make every whitespace character (tab, newline) a space."})
        standardize: bool = field(
            default=False, metadata={"help": "jiwer's wer_standardize: lowercase, expand_contractions, "
                                             "remove_non_words and whitespace_to_space together."})

    def __init__(self, config: Any = None, **options: Any) -> None:
        super().__init__(config, **options)
        self._normalise = self._normaliser()

    def _normaliser(self) -> Callable[[str], str]:
        c = self.config
        steps: list[Callable[[str], str]] = []
        if c.lowercase or c.standardize:
            steps.append(str.lower)
        if c.expand_contractions or c.standardize:
            steps.append(_expand)
        if c.remove_non_words or c.standardize:
            steps.append(lambda text: _KALDI_NON_WORD.sub("", text))
        if c.remove_punctuation:
            steps.append(lambda text: text.translate(PUNCTUATION_TABLE))
        if c.whitespace_to_space or c.standardize:
            steps.append(_whitespace_to_space)

        def normalise(text: str) -> str:
            for step in steps:
                text = step(text)
            return text

        return normalise

    def tokens(self, text: str) -> list[str]:
        raise NotImplementedError

    def score(self, case: Case) -> Score:
        if case.reference is None or case.candidate is None:
            return missing_field(self.name, "reference" if case.reference is None else "candidate")
        counts = align(self.tokens(self._normalise(case.reference)), self.tokens(self._normalise(case.candidate)))
        return Score(value=counts.rate, details=counts.details(self.unit))

    def aggregate(self, scores: list[Score]) -> dict[str, float]:
        """The rate over the whole run: every case's edits over every case's reference tokens."""
        edits = reference = inserted = 0
        for score in scores:
            d = score.details or {}
            if score.error is not None or "hits" not in d:
                continue
            edits += d["substitutions"] + d["deletions"] + d["insertions"]
            inserted += d["insertions"]
            reference += d[f"reference_{self.unit}"]
        if not scores:
            return {}
        return {f"corpus_{self.name}": edits / reference if reference else float(inserted)}


class WordErrorRate(_ErrorRate):
    name = "wer"
    description = "Word error rate of the candidate transcript against the reference (jiwer's): edits per reference word."

    def tokens(self, text: str) -> list[str]:
        return [word for word in _SPACE_RUN.sub(" ", text).strip().split(" ") if word]


class CharacterErrorRate(_ErrorRate):
    name = "cer"
    description = ("Character error rate of the candidate against the reference (jiwer's): edits per reference "
                   "character, spaces included.")
    unit = "characters"

    def tokens(self, text: str) -> list[str]:
        return list(text.strip())
