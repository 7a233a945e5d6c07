"""Trials kept apart: whatever fails where (a generation, a scoring), however many epochs and
however the trials fall into scoring batches, every stored trial equals the trial computed on
its own, and every case's reduced value is the reducer over those trials.

Drawn from a fixed seed per example: the generator ``per_epoch`` answers ``metadata.answers[epoch]``
("fail" fails the generation) and the scorer ``candidate_value`` reads the answer as its value
("raise" fails the scoring), both real plugins run by the real runner through the CLI.
"""

from __future__ import annotations

import json
import math
import random

import pytest
from click.testing import CliRunner

from evalyard.cli import cli


def draw(rng: random.Random, cases: int, epochs: int) -> list[dict]:
    def answer() -> str:
        roll = rng.random()
        if roll < 0.2:
            return "fail"
        if roll < 0.3:
            return "raise"
        return rng.choice(["0", "0.25", "1"])

    return [{"id": f"c{i}", "input": f"question {i}", "metadata": {"answers": [answer() for _ in range(epochs)]}}
            for i in range(cases)]


def expected_trial(answer: str) -> tuple[float | None, bool]:
    """(value, failed) of one trial scored on its own."""
    if answer in ("fail", "raise"):
        return None, True
    return float(answer), False


def expected_reduced(reducer: str, trials: list[tuple[float | None, bool]]) -> tuple[float | None, bool]:
    values = [value for value, failed in trials if not failed]
    if not values:
        return None, True
    return {"mean": math.fsum(values) / len(values), "max": max(values), "min": min(values)}[reducer], False


@pytest.mark.parametrize("seed", range(40))
def test_every_stored_trial_equals_the_trial_scored_alone(scripted_plugin, tmp_path, seed):
    rng = random.Random(seed)
    epochs, cases, batch = rng.randint(1, 4), rng.randint(1, 7), rng.randint(1, 5)
    reducer = rng.choice(["mean", "max", "min"])
    data = draw(rng, cases, epochs)
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(case) + "\n" for case in data))
    args = ["run", str(path), "-g", "per_epoch", "-s", f"candidate_value:batch_size={batch}", "--epochs", str(epochs),
            "--reducer", reducer, "-j", str(rng.randint(1, 4)), "--json"]
    result = CliRunner().invoke(cli, args, obj=scripted_plugin, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.stdout)["run_id"]

    from evalyard.store.trials import trials_of_cases

    store = scripted_plugin.open_store()
    reduced = {row.case_id: (row.value, row.error is not None) for row in store.results(run_id, "candidate_value")}
    trials = trials_of_cases(store, run_id, [case["id"] for case in data])
    for case in data:
        alone = [expected_trial(answer) for answer in case["metadata"]["answers"]]
        if epochs > 1:
            got = [(t["value"], t["error"] is not None) for t in trials[case["id"]]["scores"]]
            assert got == alone, f"seed {seed}, case {case}"
        value, failed = reduced[case["id"]]
        want_value, want_failed = expected_reduced(reducer, alone)
        assert failed == want_failed and (failed or value == pytest.approx(want_value, abs=1e-12)), \
            f"seed {seed}, case {case}: stored {value}, want {want_value}"


def test_the_smallest_collapse_two_cases_three_epochs(scripted_plugin, tmp_path):
    """Answers [1, 0, 1] and [1, fail, 0] with mean: 0.667 and 0.5, both cases changed."""
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps({"id": "a", "input": "q", "metadata": {"answers": ["1", "0", "1"]}}) + "\n"
                    + json.dumps({"id": "b", "input": "q", "metadata": {"answers": ["1", "fail", "0"]}}) + "\n")
    result = CliRunner().invoke(cli, ["run", str(path), "-g", "per_epoch", "-s", "candidate_value", "--epochs", "3",
                                      "--json"], obj=scripted_plugin, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    store = scripted_plugin.open_store()
    values = {row.case_id: row.value for row in store.results(data["run_id"], "candidate_value")}
    assert values == {"a": pytest.approx(2 / 3), "b": pytest.approx(0.5)}
    assert data["scorers"]["candidate_value"]["epochs"]["unstable"] == 2


@pytest.mark.parametrize("epochs", [1, 2])
def test_a_failed_generation_is_not_scored_on_the_data_it_started_from(scripted_plugin, tmp_path, epochs):
    """A scorer of the conversation gets an error for a case whose generation failed, not the
    conversation the data held before generating."""
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps({"id": "ok", "messages": [{"role": "user", "content": "hello"}]}) + "\n"
                    + json.dumps({"id": "broken", "messages": [{"role": "user", "content": "fail now"}]}) + "\n")
    result = CliRunner().invoke(cli, ["run", str(path), "-g", "echo", "-s", "message_count", "--epochs", str(epochs),
                                      "--json"], obj=scripted_plugin, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    store = scripted_plugin.open_store()
    rows = {r.case_id: r for r in store.results(json.loads(result.stdout)["run_id"], "message_count")}
    assert rows["ok"].value == 1.0
    assert rows["broken"].value is None and "generation failed" in rows["broken"].error
