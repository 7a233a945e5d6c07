"""Fixtures for the judge plugin: scripted rule files and a fast-retry model layer, through
the real layers (litellm with the scripted provider)."""

from __future__ import annotations

from evalyard import Application


import pytest


@pytest.fixture(autouse=True)
def _only_these_plugins(installed_plugins, monkeypatch):
    """Load this family's entry points and namespaces (and lexicon, which the calibration examples
    use) but no other installed plugin: another family's half-finished install must not fail these
    tests."""
    monkeypatch.setenv("EVALYARD_LOAD_PLUGINS", "judge,criteria,ragas,lexicon")



@pytest.fixture
def score():
    """Score cases with a scorer instance on a fresh model layer (fast retries), on the layer's
    background loop (litellm wants one loop per process): ``score(scorer, *cases)``."""
    from evalyard.models import RetryPolicy
    from evalyard.testing import score_cases

    layer = Application().model_layer(retry=RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=0.01), seed=1)

    def score(scorer, *cases):
        scorer.models = layer
        return layer.run_sync(score_cases(scorer, cases))

    yield score
    layer.close()
