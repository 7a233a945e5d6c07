"""Paths and helpers for the lexicon plugin's tests (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalyard import Case

ROOT = Path(__file__).resolve().parents[3]  # the repository root
SHARED = ROOT.parent / "shared"
REFERENCE_DATA = SHARED / "reference" / "data"
NLTK_DATA = SHARED / "nltk_data"


def cases(*pairs: tuple[str | None, str | None]) -> list[Case]:
    """Cases from ``(reference, candidate)`` pairs."""
    return [Case(id=f"c{i}", reference=ref, candidate=cand) for i, (ref, cand) in enumerate(pairs)]


def candidates(*texts: str) -> list[Case]:
    return [Case(id=f"c{i}", candidate=text) for i, text in enumerate(texts)]


def require_nltk_data() -> None:
    """Skip unless nltk (the plugin's ``compat`` extra) and the shared NLTK data are there."""
    pytest.importorskip("nltk", reason="nltk is not installed (pip install -e 'plugins/lexicon[compat]')")
    if not NLTK_DATA.is_dir():
        pytest.skip(f"NLTK data not found at {NLTK_DATA} (expected ../shared/nltk_data beside the repository)")
