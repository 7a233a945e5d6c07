"""Text rules of Trust-Score: answer normalisation, citation stripping and parsing, sentences.

The compatible rules reproduce trust-eval 0.1.5 exactly, quirks included (substring
matching without word boundaries, ``[1, 2]`` read as ``[1``); the corrected rules are
what a careful reader of the paper expects. Both live here so every scorer uses one copy.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize(text: str) -> str:
    """SQuAD-style normalisation: lowercase, drop ASCII punctuation, blank out articles, squeeze spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def remove_citations(text: str) -> str:
    """trust-eval's citation stripping: `` [n`` then ``[n`` then `` |`` then every ``]``.

    ``"in 1928 [1, 2]."`` becomes ``"in 1928, 2."``: the original leaves that debris, and the
    compatible metrics must see the same text."""
    text = re.sub(r" \[\d+", "", text)
    text = re.sub(r"\[\d+", "", text)
    text = text.replace(" |", "")
    return text.replace("]", "")


_CITATION_GROUP = re.compile(r"\s*\[(\s*\d+\s*(?:[,;]\s*\d+\s*)*)\]")


def remove_citations_corrected(text: str) -> str:
    """Drop whole citation groups (``[1]``, ``[1, 2]``, ``[1][3]``) and nothing else."""
    return _CITATION_GROUP.sub("", text)


@dataclass
class Citations:
    """The citation ids of one sentence, 0-based, and what was wrong with them."""

    ids: list[int] = field(default_factory=list)
    invalid: list[int] = field(default_factory=list)  # corrected mode: 1-based ids that name no document


def parse_citations(sentence: str, n_docs: int, corrected: bool) -> Citations:
    """Citation ids of a sentence.

    Compatible: every ``[<digits>`` (only the first id of ``[1, 2]``), minus one, so ``[0]``
    becomes -1 (which Python indexing turns into the last document, as upstream).
    Corrected: every id of every ``[...]`` group; ``[0]`` and ids past the last document are
    reported in ``invalid`` instead of being used."""
    if not corrected:
        return Citations([int(m[1:]) - 1 for m in re.findall(r"\[\d+", sentence)])
    out = Citations()
    for group in _CITATION_GROUP.findall(sentence):
        for number in re.findall(r"\d+", group):
            value = int(number)
            if 1 <= value <= n_docs:
                out.ids.append(value - 1)
            else:
                out.invalid.append(value)
    return out


def presence(aliases: list[str], text: str, corrected: bool = False) -> bool:
    """Whether any alias occurs in the text after normalisation.

    Compatible: a plain substring test (``"na"`` is found in ``"banana"``; an alias that
    normalises to nothing is found everywhere). Corrected: whole words only, empty aliases never."""
    normalized_text = normalize(text)
    for alias in aliases:
        wanted = normalize(alias)
        if not corrected:
            if wanted in normalized_text:
                return True
        elif wanted and re.search(rf"(?<!\S){re.escape(wanted)}(?!\S)", normalized_text):
            return True
    return False


def list_items(output: str) -> list[str]:
    """QAMPARI's comma-separated answer list: trailing space, ``.``, ``,`` stripped, then split."""
    return [x.strip() for x in output.rstrip().rstrip(".").rstrip(",").split(",")]


def format_document(doc: dict) -> str:
    """A document as the NLI model reads it (``sent`` replaces ``text`` for QA-extracted docs)."""
    body = doc["sent"] if "sent" in doc else doc.get("text", "")
    return f"Title: {doc.get('title', '')}\n{body}"


# -- sentences ----------------------------------------------------------------------

#: Abbreviations that end with a period without ending a sentence, for the fallback splitter
#: used when NLTK's trained English Punkt model (``punkt_tab``) is not installed.
_ABBREVIATIONS = (
    "mr mrs ms dr prof sr jr st mt ft vs etc e.g i.e u.s u.k u.n a.m p.m no nos fig figs vol vols ed eds "
    "inc ltd co corp jan feb mar apr jun jul aug sep sept oct nov dec gen gov sen rep col lt sgt capt "
    "cmdr adm rev hon pres approx dept est univ assn bros ph.d b.c a.d"
).split()


class SentenceSplitter:
    """``nltk.sent_tokenize`` when NLTK's English Punkt data is installed (exact upstream
    behaviour); otherwise NLTK's Punkt algorithm with a built-in abbreviation list. Which one
    ran is ``name``, recorded in each scorer's fingerprint."""

    def __init__(self, prefer: str = "auto") -> None:
        self._split = None
        self.name = ""
        self.prefer = prefer

    def _load(self) -> None:
        import nltk

        if self.prefer in ("auto", "punkt"):
            try:
                nltk.data.find("tokenizers/punkt_tab/english/")
            except LookupError:
                if self.prefer == "punkt":
                    from evalyard import ConfigError

                    raise ConfigError("sentences=punkt needs NLTK's punkt_tab data (nltk.download('punkt_tab') "
                                      "or NLTK_DATA); sentences=builtin works without it") from None
            else:
                self._split = nltk.sent_tokenize
                self.name = "nltk-punkt_tab"
                return
        from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

        params = PunktParameters()
        params.abbrev_types = set(_ABBREVIATIONS)
        self._split = PunktSentenceTokenizer(params).tokenize
        self.name = "punkt-builtin-abbreviations"

    def resolved(self) -> str:
        if self._split is None:
            self._load()
        return self.name

    def __call__(self, text: str) -> list[str]:
        if self._split is None:
            self._load()
        return list(self._split(text))
