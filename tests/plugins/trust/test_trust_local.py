"""Trust-Score with the `judge` entailment backend on the local Qwen model, offline: the example
data end to end through the CLI, the model layer and the local-model plugin. The fast tier replays
the model's recorded answers (``answering_model``)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from evalyard.cli import cli
from testutil import ROOT


@pytest.fixture
def model(answering_model, monkeypatch):
    monkeypatch.setenv("EVALYARD_LOAD_PLUGINS", "trust,local")
    return answering_model


def test_trust_score_with_local_entailment(model):
    from evalyard import Application

    app = Application()
    result = CliRunner().invoke(cli, [
        "run", str(ROOT / "examples" / "trust.yaml"), "--judge-model", model,
        "-s", "trust_score:mode=em,entailment=judge,entailment_answer=logprobs", "--json"], obj=app)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    aggregate = data["scorers"]["trust_score"]["aggregate"]
    assert aggregate["num_errors"] == 0 and aggregate["num_samples"] == 6
    assert data["usage"]["calls"] >= 6 and model in data["usage"]["by_model"]
    eiffel = next(r for r in app.open_store().results(data["run_id"]) if r.case_id == "eiffel")
    assert eiffel.details["citations"]["recall"] == 1.0  # "[1]" does state the completion year
    assert 0 <= aggregate["trust_score"] <= 100
