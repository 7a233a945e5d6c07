"""Helpers for the sandbox plugin's tests (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations


from evalyard import Case

from testutil import REFERENCE_DATA  # noqa: F401 (the sandbox tests import it from here)


def code_case(code: str | None, tests: str | None = None, case_id: str = "c", **metadata) -> Case:
    """A case with candidate ``code`` and ``tests`` as metadata.unit_tests (None: left out)."""
    if tests is not None:
        metadata["unit_tests"] = tests
    return Case(id=case_id, candidate=code, metadata=metadata)
