"""Fixtures for the Trust-Score plugin: scripted-model rule files."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def rules(tmp_path):
    """Write a list of scripted-model rules; returns the ``scripted/PATH`` model string."""

    def write(rule_list, name="rules.jsonl"):
        path = tmp_path / name
        path.write_text("".join(json.dumps(r) + "\n" for r in rule_list))
        return f"scripted/{path}"

    return write
