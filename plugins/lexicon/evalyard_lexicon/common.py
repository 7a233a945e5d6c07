"""Small pieces shared by the lexicon scorers."""

from __future__ import annotations

import unicodedata
from dataclasses import field
from typing import Any

from evalyard import Score


def arthur_compat_field(what: str) -> Any:
    """The ``arthur_compat`` config field, with help text naming what it reproduces."""
    return field(
        default=False,
        metadata={"help": f"Reproduce Arthur Bench 0.3.1 exactly, including its bugs: {what}."},
    )


def missing_field(scorer: str, name: str) -> Score:
    """The error for a case without a field the scorer needs (the runner checks first;
    this covers direct calls)."""
    return Score.failure(f"{scorer} needs a {name}, and this case has none")


class _PunctuationTable(dict):
    """``str.translate`` table deleting Unicode punctuation (categories P*): curly
    quotes and dashes as well as ASCII punctuation; symbols ($, %, +) are content.

    Filled on demand (a table of all 1.1M code points would be slow to build):
    each code point is classified once, then maps to None (delete) or to itself.
    """

    def __missing__(self, codepoint: int) -> int | None:
        value = None if unicodedata.category(chr(codepoint)).startswith("P") else codepoint
        self[codepoint] = value
        return value


PUNCTUATION_TABLE = _PunctuationTable()
