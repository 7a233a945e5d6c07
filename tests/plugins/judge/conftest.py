"""Fixtures for the judge plugin: scripted rule files and a fast-retry model layer, through
the real layers (litellm with the scripted provider)."""

from __future__ import annotations

import json

import pytest


@pytest.fixture(autouse=True)
def _only_these_plugins(installed_plugins, monkeypatch):
    """Load this family's entry points (and lexicon, which the calibration examples use) but no
    other installed plugin: another family's half-finished install must not fail these tests."""
    monkeypatch.setenv("EVALYARD_LOAD_PLUGINS", "judge,criteria,lexicon")


@pytest.fixture
def rules(tmp_path):
    """Write a list of scripted-model rules; returns the ``scripted/PATH`` model string."""
    counter = iter(range(1_000_000))

    def write(rule_list, name=None):
        path = tmp_path / (name or f"rules{next(counter)}.yaml")
        if path.suffix == ".jsonl":
            path.write_text("\n".join(json.dumps(r) for r in rule_list) + "\n")
        else:
            import yaml

            path.write_text(yaml.safe_dump(rule_list, sort_keys=False))
        return f"scripted/{path}"

    return write


@pytest.fixture
def score():
    """Score cases with a scorer instance on a fresh model layer (fast retries), on the layer's
    background loop (litellm wants one loop per process): ``score(scorer, *cases)``."""
    from evalyard.models import ModelLayer, RetryPolicy

    layer = ModelLayer(retry=RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=0.01), seed=1)

    def score(scorer, *cases):
        scorer.models = layer
        return layer.run_sync(scorer.ascore_batch(list(cases)))

    yield score
    layer.close()
