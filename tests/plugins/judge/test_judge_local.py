"""A judge with the local Qwen model, offline: a full run through the CLI, the model layer and
the local-model plugin. Yes/no judges read P(yes) from the first answer token, which a small
model gives reliably. The fast tier replays the model's recorded answers (``answering_model``)."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from evalyard.cli import cli

CASES = [
    ("paris-right", "What is the capital of France?", "The capital of France is Paris.", "Paris", "yes"),
    ("paris-wrong", "What is the capital of France?", "The capital of France is Lyon.", "Paris", "no"),
    ("boil-right", "At what temperature does water boil at sea level?", "100 degrees Celsius.", "100 °C", "yes"),
    ("boil-wrong", "At what temperature does water boil at sea level?", "50 degrees Celsius.", "100 °C", "no"),
]


@pytest.fixture
def model(answering_model, monkeypatch):
    monkeypatch.setenv("EVALYARD_LOAD_PLUGINS", "judge,criteria,local")
    return answering_model


def test_a_judge_with_the_local_qwen_model(model, tmp_path):
    from evalyard import Application

    suite = {"name": "judges-local", "scorers": [{"name": "criteria/correctness", "config": {"logprobs": True}}],
             "cases": [{"id": i, "input": q, "candidate": c, "reference": r, "metadata": {"gold": gold}}
                       for i, q, c, r, gold in CASES]}
    path = tmp_path / "judges-local.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    app = Application()
    result = CliRunner().invoke(cli, ["run", str(path), "--judge-model", model, "--json"], obj=app)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["scorers"]["criteria/correctness"]["errors"] == 0 and data["usage"]["calls"] == 4
    for row in app.open_store().results(data["run_id"]):
        gold = next(g for i, *_, g in CASES if i == row.case_id)
        assert row.label == gold, (row.case_id, row.value, row.details)
        assert (row.value > 0.6) if gold == "yes" else (row.value < 0.4)  # P(yes), not a coin toss
