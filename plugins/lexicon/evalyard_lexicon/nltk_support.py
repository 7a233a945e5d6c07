"""Optional NLTK resources for ``arthur_compat`` mode, never downloaded, loaded lazily.

Arthur Bench 0.3.1 used NLTK's tokeniser and POS tagger (specificity) and, through
textstat 0.7.9+, NLTK's cmudict corpus (readability). Reproducing its numbers
exactly needs those data files; everything else in this plugin works without
NLTK. Nothing here runs at import time: ``import nltk`` is slow and the
default modes must not need it. We never call ``nltk.download`` (evaluation runs
offline): when a resource is missing, callers fall back to an approximation and
say so in the score's details.
"""

from __future__ import annotations

import importlib.util
import threading
from dataclasses import dataclass
from typing import Any, Callable, Sequence

PUNKT = "tokenizers/punkt_tab/english/"
TAGGER = "taggers/averaged_perceptron_tagger_eng/"
CMUDICT = "corpora/cmudict/cmudict"

INSTALL_HINT = (
    "install evalyard-lexicon[compat] and the NLTK data "
    "(nltk.download('punkt_tab'), 'averaged_perceptron_tagger_eng', 'cmudict') "
    "or point NLTK_DATA at a folder holding them"
)


def _import_nltk(data_dirs: Sequence[str] = ()) -> Any | None:
    if importlib.util.find_spec("nltk") is None:
        return None
    import nltk

    # nltk reads NLTK_DATA only when it is first imported; the application's value (the
    # ``lexicon.nltk_data`` setting, read from NLTK_DATA) goes first, as nltk would put it.
    for entry in reversed(list(data_dirs)):
        if entry not in nltk.data.path:
            nltk.data.path.insert(0, entry)
    return nltk


def find_resource(name: str, data_dirs: Sequence[str] = ()) -> tuple[Any, str | None]:
    """``(nltk module, None)`` if ``name`` is available, else ``(None, reason)``."""
    nltk = _import_nltk(data_dirs)
    if nltk is None:
        return None, f"nltk is not installed ({INSTALL_HINT})"
    try:
        nltk.data.find(name)
    except LookupError:
        return None, f"NLTK resource {name.rstrip('/')!r} not found ({INSTALL_HINT})"
    return nltk, None


@dataclass
class PosTagger:
    """``nltk.pos_tag(nltk.word_tokenize(text))`` with the tagger model loaded once.

    ``nltk.pos_tag`` builds a new PerceptronTagger (reading its model files) on
    every call; tagging with one instance gives the same tags far faster.
    """

    tokenize: Callable[[str], list[str]]
    tag: Callable[[list[str]], list[tuple[str, str]]]

    def tags(self, text: str) -> list[tuple[str, str]]:
        return self.tag(self.tokenize(text))


_tagger: PosTagger | None = None
_tagger_lock = threading.Lock()


def load_pos_tagger(data_dirs: Sequence[str] = ()) -> tuple[PosTagger | None, str | None]:
    """The English tokeniser + tagger, or ``(None, reason)`` if unavailable."""
    global _tagger
    for resource in (PUNKT, TAGGER):
        nltk, reason = find_resource(resource, data_dirs)
        if nltk is None:
            return None, reason
    with _tagger_lock:
        if _tagger is None:
            from nltk.tag.perceptron import PerceptronTagger

            _tagger = PosTagger(tokenize=nltk.word_tokenize, tag=PerceptronTagger().tag)
    return _tagger, None


def cmudict_location(data_dirs: Sequence[str] = ()) -> tuple[Any, str | None]:
    """A path pointer to NLTK's cmudict file (``.open()`` gives bytes), or ``(None, reason)``."""
    nltk, reason = find_resource(CMUDICT, data_dirs)
    if nltk is None:
        return None, reason
    return nltk.data.find(CMUDICT), None
