"""word_count_match: textstat word counts, asymmetric formula, defined for two empty texts."""

from __future__ import annotations

import pytest
from lexicon_helpers import cases

from evalyard_lexicon import WordCountMatch


def words(n: int) -> str:
    return " ".join(["word"] * n)


def test_upstream_examples():
    # Arthur Bench's own test: word counts (candidate/reference) 10/9, 11/14, 11/11, 7/12.
    pairs = [(words(9), words(10)), (words(14), words(11)), (words(11), words(11)), (words(12), words(7))]
    values = [s.value for s in WordCountMatch().score_batch(cases(*pairs))]
    assert values == pytest.approx([0.8888888, 0.7857142, 1.0, 0.583333], abs=1e-6)


def test_asymmetric_and_floored_at_zero():
    scorer = WordCountMatch()
    short_ref, long_ref = scorer.score_batch(cases((words(2), words(4)), (words(4), words(2))))
    assert short_ref.value == 0.0  # delta 2 is not > 2: (2-2)/2
    assert long_ref.value == 0.5
    assert scorer.score_batch(cases((words(2), words(7))))[0].value == 0.0


def test_counts_follow_textstat():
    result = WordCountMatch().score_batch(cases(("A well-known fact, isn't it?", "… 🎉 — Yes!!")))[0]
    assert result.details == {"reference_words": 5, "candidate_words": 1}


def test_empty_texts():
    scorer = WordCountMatch()
    both_empty, empty_reference, emoji_only = scorer.score_batch(cases(("", "..."), ("", "Hi there"), ("🎉🎉", "")))
    assert (both_empty.value, both_empty.error) == (1.0, None)
    assert empty_reference.value == 0.0
    assert emoji_only.value == 1.0  # neither has words


def test_arthur_compat_records_the_division_by_zero():
    scorer = WordCountMatch(arthur_compat=True)
    both_empty, fine = scorer.score_batch(cases(("", "🎉"), ("one two", "one")))
    assert both_empty.value is None and both_empty.error == "ZeroDivisionError: division by zero"
    assert both_empty.details == {"reference_words": 0, "candidate_words": 0}
    assert fine.value == 0.5  # the rest of the batch is unaffected


def test_bad_value_is_one_error_not_a_sunk_batch():
    results = WordCountMatch().score_batch(cases((123, "a"), ("a", "a")))  # type: ignore[arg-type]
    assert results[0].error and results[0].value is None
    assert results[1].value == 1.0
