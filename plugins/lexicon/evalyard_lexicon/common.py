"""Small pieces shared by the lexicon scorers."""

from __future__ import annotations

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
