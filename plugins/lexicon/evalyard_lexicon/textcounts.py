"""Word and sentence counting with textstat's semantics (0.7.8, identical in 0.7.13).

textstat is what Arthur Bench used, so its counts define the reference values. We
reimplement them instead of calling textstat because textstat goes through several
cached layers per call (and its 128-entry caches make benchmarks on repeated texts
misleading); the results are identical, which the tests check on random texts.

textstat's rules, for reference:

- ``lexicon_count(text, removepunct=True)``: delete every apostrophe that does not
  start a contraction ending (``'t 's 'd 've 'll 're``, case-sensitive) and every
  character that is neither a word character, whitespace nor an apostrophe, then
  ``split()`` on whitespace.
- ``sentence_count``: pieces matching ``\\b[^.!?]+[.!?]*``; pieces of two words or
  fewer are ignored; at least 1, except 0 for the empty string.
"""

from __future__ import annotations

import re

#: textstat's punctuation removal in one pass. The lookahead reads the original
#: text, exactly as textstat's first pass (apostrophes) does before its second.
_PUNCTUATION = re.compile(r"[^\w\s']|'(?![tsd]|ve|ll|re)")

#: A whitespace-delimited token with no word character (only punctuation, symbols,
#: emoji). Punctuation removal never touches whitespace, so tokens never merge or
#: split; a token vanishes iff it has no word character (a kept contraction
#: apostrophe is always followed by a letter of its own token). So textstat's
#: count is ``len(text.split())`` minus these tokens, without building the
#: cleaned text (about twice as fast as textstat's two substitutions). The pattern
#: starts with the whitespace before the token (we prepend a space for the first
#: token) because sre scans quickly for a leading character class.
_WORDLESS_TOKEN = re.compile(r"\s[^\w\s]+(?=\s|\Z)")

_SENTENCE = re.compile(r"\b[^.!?]+[.!?]*")


def remove_punctuation(text: str) -> str:
    """textstat's ``remove_punctuation(text, rm_apostrophe=False)``."""
    return _PUNCTUATION.sub("", text)


def words(text: str) -> list[str]:
    """The words textstat counts: punctuation removed, whitespace split, case kept."""
    return _PUNCTUATION.sub("", text).split()


def lexicon_count(text: str) -> int:
    """``textstat.lexicon_count(text, removepunct=True)``."""
    return len(text.split()) - len(_WORDLESS_TOKEN.findall(" " + text))


def sentence_count(text: str) -> int:
    """``textstat.sentence_count(text)``."""
    if not text:
        return 0
    pieces = _SENTENCE.findall(text)
    counted = sum(1 for piece in pieces if lexicon_count(piece) > 2)
    return max(1, counted)
