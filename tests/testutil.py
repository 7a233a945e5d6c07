"""Helpers shared by tests (a module of its own: every folder's conftest is named `conftest`)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent
#: Figures computed by the original packages (see tests/data/reference/README.md).
REFERENCE_DATA = TESTS / "data" / "reference"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
