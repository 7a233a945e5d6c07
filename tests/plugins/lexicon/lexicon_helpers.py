"""Paths and helpers for the lexicon plugin's tests (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evalyard import Case
from testutil import REFERENCE_DATA  # noqa: F401 (the lexicon tests import it from here)

#: NLTK's corpora may not be copied into the repository: the tests that need them run when
#: NLTK_DATA names a folder holding them (CI points it at its copy) and skip otherwise.
NLTK_DATA = Path(os.environ["NLTK_DATA"]) if os.environ.get("NLTK_DATA") else None


def cases(*pairs: tuple[str | None, str | None]) -> list[Case]:
    """Cases from ``(reference, candidate)`` pairs."""
    return [Case(id=f"c{i}", reference=ref, candidate=cand) for i, (ref, cand) in enumerate(pairs)]


def candidates(*texts: str) -> list[Case]:
    return [Case(id=f"c{i}", candidate=text) for i, text in enumerate(texts)]


def require_nltk_data() -> None:
    """Skip, saying why, unless nltk (the plugin's ``compat`` extra) and NLTK's data (``NLTK_DATA``) are there."""
    pytest.importorskip("nltk", reason="nltk is not installed (pip install -e 'plugins/lexicon[compat]')")
    if NLTK_DATA is None:
        pytest.skip("NLTK data: set NLTK_DATA to a folder holding punkt_tab, averaged_perceptron_tagger_eng "
                    "and cmudict to run this test")
    if not NLTK_DATA.is_dir():
        pytest.skip(f"NLTK data: NLTK_DATA={NLTK_DATA} is not a folder")
