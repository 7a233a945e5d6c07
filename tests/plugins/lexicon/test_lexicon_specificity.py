"""specificity: corrected mode (whole words, weights 1/3, heuristic P) and Arthur compat."""

from __future__ import annotations

import pytest
from lexicon_helpers import candidates

from evalyard_lexicon import Specificity
from evalyard_lexicon.proper_nouns import count_proper_nouns_and_numbers

SUBSTRING_TRAP = "Something awesome is likely to ensure the mayor's measure."


def score(text: str, **config):
    return Specificity(**config).score_batch(candidates(text))[0]


def test_components_and_mean():
    result = score("On 20 July 1969 Neil Armstrong landed Apollo 11 near the Sea of Tranquility.")
    details = result.details
    assert {"V", "F", "P", "n", "counter", "pn", "wf"} <= details.keys()
    assert details["n"] == 14 and details["counter"] == 0 and details["V"] == 1.0
    assert result.value == pytest.approx((details["V"] + details["F"] + details["P"]) / 3)
    assert 0.0 <= result.value <= 1.0


def test_vague_words_match_whole_words_only():
    # Arthur Bench counts 6 "vague words" here (some, some, like, may, sure, sure) out of 9.
    assert score(SUBSTRING_TRAP).details["counter"] == 0
    assert score(SUBSTRING_TRAP, arthur_compat=True).details["counter"] == 6


def test_each_vague_word_counts_once_and_punctuation_is_ignored():
    details = score("Most of it is, like, almost done; sure.").details
    assert details["counter"] == 4  # most, like, almost, sure
    compat = score("Most of it is, like, almost done; sure.", arthur_compat=True).details
    # "most" is listed twice and "almost" contains it: most 2x2, almost, like, sure.
    assert compat["counter"] == 7


def test_vagueness_scale():
    assert score("The report covers twelve regional offices in detail today.").details["V"] == 1.0
    # 2 vague words of 10 (20 %): V reaches 0.
    assert score("Maybe some results could be good enough for the team.").details["V"] == 0.0


def test_max_is_one_in_corrected_mode():
    result = score("Paris")
    assert result.value == pytest.approx(1.0)
    assert score("Paris", arthur_compat=True).value == pytest.approx(0.99)


@pytest.mark.parametrize("text", ["", "   ", "...", "\u201c\u201d", "🎉🎉🎉"])
def test_no_words_is_defined(text):
    result = score(text)
    assert result.error is None and result.value == 0.0
    assert result.details["n"] == 0 and result.details["V"] is None
    assert "no words" in result.details["reason"]


@pytest.mark.parametrize("text", ["", "...", "🎉🎉🎉"])
def test_compat_records_the_division_by_zero(text, no_nltk_data):
    result = score(text, arthur_compat=True)
    assert result.value is None and result.error == "ZeroDivisionError: division by zero"
    assert result.details["F"] == 0.0 and result.details["V"] is None and result.details["P"] is None


def test_one_failing_case_does_not_sink_the_batch():
    results = Specificity(arthur_compat=True).score_batch(candidates("", "Paris is in France."))
    assert results[0].error and results[1].value > 0


def test_compat_without_nltk_data_approximates_p(no_nltk_data):
    result = score("Neil Armstrong walked on the Moon in 1969.", arthur_compat=True)
    assert result.error is None
    assert result.details["approximated"] == ["P"]
    assert "NNP" in result.details["approximation_reason"]
    assert result.details["pn"] == count_proper_nouns_and_numbers("Neil Armstrong walked on the Moon in 1969.")


def test_compat_with_nltk_tags(nltk_data):
    result = score("5 km is approximately 3.107 miles.", arthur_compat=True)
    assert "approximated" not in result.details
    assert result.details["pn"] == 1 and result.details["tokens"] == 7  # as recorded for num-005


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Paris", 1),  # a bare name
        ("Jane Austen", 2),
        ("Yes", 0),  # a bare common word is not a name
        ("She is from Canada.", 1),
        ("Paris is lovely. I like Paris.", 2),  # sentence-initial, but also mid-sentence
        ("Recent work is promising.", 0),  # an ordinary sentence-initial capital
        ("NASA launched it.", 1),
        ("I think I'm right.", 0),
        ("Dr. Smith met J. K. Rowling.", 4),  # Dr. and J. do not end a sentence
        ("It costs $4.2B, up 12% in Q3 2024.", 4),
        ("seven hundred people", 2),
        ("Buy an iPhone.", 1),
        ("\u201cDon\u2019t panic.\u201d", 0),  # curly quotes are not proper nouns
        ("Red\nYellow\nBlue", 3),
        ("first line\nSecond line here", 0),  # a new line starts a sentence
        ("Done. \u2014 Recent work helps.", 0),  # a dash does not hide a sentence start
        ("We met \u2014 Anna and I \u2014 today . Then we left", 1),
    ],
)
def test_proper_noun_and_number_heuristic(text, expected):
    assert count_proper_nouns_and_numbers(text) == expected


def test_missing_candidate_is_an_error():
    from evalyard import Case

    assert "candidate" in Specificity().score_batch([Case(id="x")])[0].error
