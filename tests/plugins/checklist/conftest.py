"""Fixtures for the checklist plugin's tests: scripted rule files (the fake server is used as a context manager)."""

from __future__ import annotations

import json
import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture
def rules(tmp_path):
    """Write a list of scripted-model rules; returns the ``scripted/PATH`` model string."""
    counter = iter(range(1_000_000))

    def write(rule_list, name=None):
        path = tmp_path / (name or f"rules{next(counter)}.jsonl")
        path.write_text("".join(json.dumps(r) + "\n" for r in rule_list))
        return f"scripted/{path}"

    return write
