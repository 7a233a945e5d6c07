"""Fixtures for the lexicon plugin's tests.

The reference figures of Arthur Bench live in tests/data/reference; NLTK's data is
optional (``NLTK_DATA``): tests needing it skip with the reason when it is not set.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lexicon_helpers import NLTK_DATA, REFERENCE_DATA, require_nltk_data


@pytest.fixture
def nltk_data(monkeypatch) -> Path:
    """Point NLTK at the NLTK data named by NLTK_DATA (set before nltk is first imported, and
    honoured by the plugin if nltk was imported earlier in the session)."""
    require_nltk_data()
    monkeypatch.setenv("NLTK_DATA", str(NLTK_DATA))
    return NLTK_DATA


@pytest.fixture
def no_nltk_data(monkeypatch):
    """Make every NLTK resource look missing, whatever this machine has installed."""
    from evalyard_lexicon import nltk_support

    monkeypatch.setattr(
        nltk_support, "find_resource", lambda name, data_dirs=(): (None, f"NLTK resource {name!r} not found (test)")
    )


@pytest.fixture(scope="session")
def reference_rows() -> list[tuple[dict, dict]]:
    """``(case, Arthur Bench 0.3.1 scores)`` pairs from the reference data."""
    case_file = REFERENCE_DATA / "cases.jsonl"
    score_file = REFERENCE_DATA / "arthur_bench_scores.jsonl"
    with case_file.open() as f:
        case_rows = [json.loads(line) for line in f if line.strip()]
    with score_file.open() as f:
        score_rows = [json.loads(line) for line in f if line.strip()]
    assert [c["id"] for c in case_rows] == [s["id"] for s in score_rows]
    return list(zip(case_rows, score_rows))
