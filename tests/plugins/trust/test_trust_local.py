"""Trust-Score with the `judge` entailment backend on the local Qwen model, offline: the example
data end to end through the CLI, the model layer and the local-model plugin."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalyard.cli import cli
from testutil import ROOT

# Where the user installed the local models, read before the fixtures point EVALYARD_HOME elsewhere.
_MODELS = os.environ.get("EVALYARD_MODELS_DIR") or None
_USER_HOME = Path(os.environ["EVALYARD_HOME"]) if os.environ.get("EVALYARD_HOME") else None


@pytest.fixture
def qwen(monkeypatch):
    from evalyard.settings import Settings

    directory = Path(_MODELS) if _MODELS else Settings(home=_USER_HOME).data_dir() / "models"
    if not (directory / "qwen2.5-coder-1.5b.gguf").is_file():
        pytest.skip("qwen2.5-coder-1.5b is not installed: run `evalyard models install qwen2.5-coder-1.5b`")
    monkeypatch.setenv("EVALYARD_MODELS_DIR", str(directory))
    monkeypatch.setenv("EVALYARD_LOAD_PLUGINS", "trust,local")


@pytest.mark.slow
def test_trust_score_with_local_entailment(qwen):
    from evalyard import Application

    app = Application()
    result = CliRunner().invoke(cli, [
        "run", str(ROOT / "examples" / "trust.yaml"), "--judge-model", "local/qwen2.5-coder-1.5b",
        "-s", "trust_score:mode=em,entailment=judge,entailment_answer=logprobs", "--json"], obj=app)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    aggregate = data["scorers"]["trust_score"]["aggregate"]
    assert aggregate["num_errors"] == 0 and aggregate["num_samples"] == 6
    assert data["usage"]["calls"] >= 6 and "local/qwen2.5-coder-1.5b" in data["usage"]["by_model"]
    eiffel = next(r for r in app.open_store().results(data["run_id"]) if r.case_id == "eiffel")
    assert eiffel.details["citations"]["recall"] == 1.0  # "[1]" does state the completion year
    assert 0 <= aggregate["trust_score"] <= 100
