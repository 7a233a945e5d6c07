"""exact_match: strict by default, each normalisation an option, 0.3.1's inversion in compat."""

from __future__ import annotations

import pytest
from lexicon_helpers import cases

from evalyard import ConfigError
from evalyard_lexicon import ExactMatch


def values(scorer, *pairs):
    return [s.value for s in scorer.score_batch(cases(*pairs))]


def test_default_is_strict():
    scorer = ExactMatch()
    assert values(scorer, ("Paris", "Paris"), ("Paris", "paris"), ("Jupiter", " Jupiter "), ("a\n", "a")) == [
        1.0, 0.0, 0.0, 0.0,
    ]


def test_labels_and_threshold():
    match, non_match = ExactMatch().score_batch(cases(("up", "up"), ("up", "Up")))
    assert (match.value, match.label, match.error) == (1.0, "match", None)
    assert (non_match.value, non_match.label) == (0.0, "non match")
    assert ExactMatch.labels == ("non match", "match") and ExactMatch.threshold == 1.0
    assert match.passed is None  # the runner applies the (overridable) threshold


def test_case_sensitive_false_means_case_insensitive():
    scorer = ExactMatch(case_sensitive=False)
    # The example Arthur Bench's docs gave for case_sensitive=False, which 0.3.1 failed.
    assert values(scorer, ("up", "Up"), ("Straße", "STRASSE"), ("up", "down")) == [1.0, 1.0, 0.0]


def test_no_unicode_normalisation_by_default():
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    assert values(ExactMatch(), (nfc, nfd)) == [0.0]
    assert values(ExactMatch(unicode_normalize="NFC"), (nfc, nfd)) == [1.0]
    assert values(ExactMatch(unicode_normalize="NFKC"), ("ﬁne", "fine")) == [1.0]
    assert values(ExactMatch(unicode_normalize="NFC"), ("ﬁne", "fine")) == [0.0]


def test_whitespace_and_punctuation_options():
    assert values(ExactMatch(normalize_whitespace=True), ("100 degrees  Celsius", " 100 degrees\nCelsius\n")) == [1.0]
    assert values(ExactMatch(strip_punctuation=True), ('"Don\'t panic."', "\u201cDon\u2019t panic.\u201d")) == [1.0]
    # Symbols are content, not punctuation.
    assert values(ExactMatch(strip_punctuation=True), ("$5", "5")) == [0.0]
    combined = ExactMatch(case_sensitive=False, normalize_whitespace=True, strip_punctuation=True)
    assert values(combined, ("She is Canadian.", "  she is  CANADIAN! ")) == [1.0]


def test_arthur_compat_reproduces_the_inverted_flag():
    # 0.3.1: case_sensitive=True (its default) lowercased both texts...
    assert values(ExactMatch(arthur_compat=True), ("Jane Austen", "JANE AUSTEN")) == [1.0]
    # ...and case_sensitive=False compared strictly.
    assert values(ExactMatch(arthur_compat=True, case_sensitive=False), ("Jane Austen", "JANE AUSTEN")) == [0.0]
    # lower(), not casefold(), as 0.3.1 did.
    assert values(ExactMatch(arthur_compat=True), ("Straße", "STRASSE")) == [0.0]


def test_arthur_compat_rejects_normalisation_options():
    with pytest.raises(ConfigError, match="arthur_compat"):
        ExactMatch(arthur_compat=True, strip_punctuation=True)


def test_config_from_strings():
    scorer = ExactMatch(ExactMatch.make_config({"case_sensitive": "false", "unicode_normalize": "NFC"}))
    assert scorer.config.case_sensitive is False and scorer.config.unicode_normalize == "NFC"
    with pytest.raises(ConfigError):
        ExactMatch.make_config({"unicode_normalize": "NFX"})


def test_missing_reference_is_an_error_for_that_case_only():
    results = ExactMatch().score_batch(cases((None, "a"), ("a", "a")))
    assert results[0].value is None and "reference" in results[0].error
    assert results[1].value == 1.0
