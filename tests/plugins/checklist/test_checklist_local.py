"""TICK end to end with the local Qwen model, offline: a checklist written by the model for a
case, then each item judged by the model with its first-token probabilities. The fast tier replays
the model's recorded answers (``answering_model``)."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from evalyard.cli import cli

@pytest.fixture
def model(answering_model, monkeypatch):
    monkeypatch.setenv("EVALYARD_LOAD_PLUGINS", "checklist,local")
    return answering_model


@pytest.mark.timeout(1200)  # the real model: a few minutes on a busy pair of cores (the replay: seconds)
def test_tick_with_the_local_model(model, tmp_path):
    # temperature 0: TICK's own 0.7 sometimes gets a one-item checklist from a 1.5B model, which is
    # (rightly) refused under min_items=2; greedy decoding makes the test repeatable.
    from evalyard import Application

    app = Application()
    suite = tmp_path / "haiku.yaml"
    suite.write_text(yaml.safe_dump({"name": "haiku", "cases": [{
        "id": "haiku", "input": "Write a haiku about autumn leaves.",
        "candidate": "Crimson leaves descend\nwhispering to the cold earth\nautumn says goodbye"}]}))
    checklists = tmp_path / "checklists.jsonl"
    made = CliRunner().invoke(cli, ["checklist", "generate", str(suite), "-p", "tick", "-m", model, "-o",
                                    str(checklists), "-O", "max_items=4", "-O", "temperature=0"], obj=app)
    assert made.exit_code == 0, made.output
    [line] = checklists.read_text().splitlines()
    items = json.loads(line)["checklist"]["items"]
    # Each item is a question; the model may append an answer hint after it ("...? (YES/NO)")
    assert 2 <= len(items) <= 4 and all("?" in item["question"] for item in items)
    scored = CliRunner().invoke(cli, ["run", str(suite), "-s",
                                      f"checklist:checklists={checklists},mode=item,use_logprobs=true",
                                      "--judge-model", model, "--json"], obj=app)
    assert scored.exit_code == 0, scored.output
    data = json.loads(scored.stdout)
    assert data["scorers"]["checklist"]["errors"] == 0 and data["usage"]["calls"] == len(items)
    [result] = app.open_store().results(data["run_id"])
    for item in result.details["items"]:
        assert item["confidence_source"] == "logprobs" and 0 <= item["confidence"] <= 1
        assert item["answer"] == ("yes" if item["confidence"] >= 0.6 else "no")
