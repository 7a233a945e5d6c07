"""Helpers for the sandbox plugin's tests (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

from pathlib import Path

from evalyard import Case

ROOT = Path(__file__).resolve().parents[3]  # the repository root
REFERENCE_DATA = ROOT.parent / "shared" / "reference" / "data"


def code_case(code: str | None, tests: str | None = None, case_id: str = "c", **metadata) -> Case:
    """A case with candidate ``code`` and ``tests`` as metadata.unit_tests (None: left out)."""
    if tests is not None:
        metadata["unit_tests"] = tests
    return Case(id=case_id, candidate=code, metadata=metadata)
