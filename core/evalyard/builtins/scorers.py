"""Small built-in scorers that need nothing beyond the standard library.

They exist so a bare ``pip install evalyard`` can score something, and they
dogfood the same ``register_scorers`` hook that third-party plugins use.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from ..hookspecs import hookimpl
from ..scoring import Case, Score, Scorer


class Contains(Scorer):
    name = "contains"
    description = "1 if the reference text occurs inside the candidate, else 0."
    requires = ("reference", "candidate")
    labels = ("absent", "present")
    threshold = 1.0

    @dataclass
    class Config:
        case_sensitive: bool = field(default=True, metadata={"help": "compare letters' case exactly"})

    def score(self, case: Case) -> Score:
        needle, haystack = case.reference, case.candidate
        if not self.config.case_sensitive:
            needle, haystack = needle.casefold(), haystack.casefold()
        found = needle in haystack
        return Score(value=float(found), label=self.labels[found])


class RegexMatch(Scorer):
    name = "regex_match"
    description = "1 if the candidate matches a regular expression (searched anywhere), else 0."
    requires = ("candidate",)
    labels = ("no match", "match")
    threshold = 1.0

    @dataclass
    class Config:
        pattern: str = field(default=".", metadata={"help": "Python regular expression"})
        full_match: bool = field(default=False, metadata={"help": "require the whole candidate to match"})

        def __post_init__(self) -> None:
            try:
                self.compiled = re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"pattern {self.pattern!r} is not a valid regular expression: {exc}") from None

    def score(self, case: Case) -> Score:
        matcher = self.config.compiled.fullmatch if self.config.full_match else self.config.compiled.search
        found = matcher(case.candidate) is not None
        return Score(value=float(found), label=self.labels[found])


class JsonValid(Scorer):
    name = "json_valid"
    description = "1 if the candidate parses as JSON, else 0 (the parser's message in details)."
    requires = ("candidate",)
    labels = ("invalid", "valid")
    threshold = 1.0

    def score(self, case: Case) -> Score:
        try:
            json.loads(case.candidate)
        except ValueError as exc:
            return Score(value=0.0, label="invalid", details={"reason": str(exc)})
        return Score(value=1.0, label="valid")


@hookimpl
def register_scorers(register):
    register(Contains)
    register(RegexMatch)
    register(JsonValid)
    from .jury import Jury  # pools any registered scorers: registered here, beside the other built-ins

    register(Jury)
