"""``exact_match``: 1.0 when candidate and reference are the same text, else 0.0.

By default the comparison is strict: ``case_sensitive=True`` means what it says, and
nothing is stripped or normalised (NFD and NFC accents differ, so does a trailing
newline). Each normalisation is an explicit option, applied in this order:
Unicode normalisation, punctuation removal, whitespace normalisation, case folding.

Arthur Bench 0.3.1 inverted the flag (issue #121): with ``case_sensitive=True``, its
default, it lowercased both strings, and ``case_sensitive=False`` compared them
strictly. ``arthur_compat=True`` reproduces that.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from evalyard import Case, Score, Scorer

from .common import PUNCTUATION_TABLE, arthur_compat_field, missing_field

_WHITESPACE_RUN = re.compile(r"\s+")



def _normaliser(config: "ExactMatch.Config") -> Callable[[str], str] | None:
    """One function applying the configured normalisations, or None for a plain ``==``."""
    steps: list[Callable[[str], str]] = []
    if config.arthur_compat:
        # 0.3.1 lowercased exactly when case_sensitive was True.
        return str.lower if config.case_sensitive else None
    if config.unicode_normalize != "none":
        form = config.unicode_normalize
        steps.append(lambda s: unicodedata.normalize(form, s))
    if config.strip_punctuation:
        steps.append(lambda s: s.translate(PUNCTUATION_TABLE))
    if config.normalize_whitespace:
        steps.append(lambda s: _WHITESPACE_RUN.sub(" ", s).strip())
    if not config.case_sensitive:
        steps.append(str.casefold)  # casefold, not lower: "Straße" == "STRASSE"
    if not steps:
        return None
    if len(steps) == 1:
        return steps[0]

    def normalise(text: str) -> str:
        for step in steps:
            text = step(text)
        return text

    return normalise


class ExactMatch(Scorer):
    name = "exact_match"
    description = "1.0 if the candidate equals the reference (strict by default; normalisations are options)."
    requires = ("reference", "candidate")
    labels = ("non match", "match")
    threshold = 1.0

    @dataclass
    class Config:
        case_sensitive: bool = field(
            default=True, metadata={"help": "Compare letter case too; false compares case-folded text."}
        )
        normalize_whitespace: bool = field(
            default=False,
            metadata={"help": "Strip both ends and collapse each run of whitespace to one space."},
        )
        strip_punctuation: bool = field(
            default=False,
            metadata={"help": "Delete Unicode punctuation (incl. curly quotes and dashes) before comparing."},
        )
        unicode_normalize: Literal["none", "NFC", "NFKC", "NFD", "NFKD"] = field(
            default="none",
            metadata={"help": "Unicode normalisation form applied first (NFC makes NFD accents equal)."},
        )
        arthur_compat: bool = arthur_compat_field(
            "case_sensitive=True lowercases both texts, case_sensitive=False compares strictly; "
            "cannot be combined with the normalisation options"
        )

        def __post_init__(self) -> None:
            if self.arthur_compat and (
                self.normalize_whitespace or self.strip_punctuation or self.unicode_normalize != "none"
            ):
                raise ValueError(
                    "arthur_compat reproduces Arthur Bench 0.3.1, which had no normalisation options: "
                    "turn normalize_whitespace, strip_punctuation and unicode_normalize off"
                )

    def __init__(self, config: Any = None, **options: Any) -> None:
        super().__init__(config, **options)
        self._normalise = _normaliser(self.config)

    def score(self, case: Case) -> Score:
        reference, candidate = case.reference, case.candidate
        if reference is None or candidate is None:
            return missing_field(self.name, "reference" if reference is None else "candidate")
        if self._normalise is not None:
            reference, candidate = self._normalise(reference), self._normalise(candidate)
        matched = reference == candidate
        return Score(value=float(matched), label=self.labels[matched])
