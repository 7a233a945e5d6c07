"""Runs stream: bounded batches in flight, cases read a window at a time, a run stopped while its
cases were being stored resumes, bad input anywhere in a file stores nothing, results are lazy."""

from __future__ import annotations

import asyncio
import itertools
import json
from dataclasses import dataclass

import pytest
from click.testing import CliRunner

from evalyard import Case, Score, Scorer, hookimpl
from evalyard.cli import cli
from evalyard.analysis.stats import BOOTSTRAP_LIMIT, bootstrap_ci, summarize
from testutil import write


class PendingBatches(Scorer):
    """Counts its batches pending at once (an async batch scorer: the runner's bound, not a pool's)."""

    name = "pending_batches"
    executor = "async"
    batch_size = 4
    now = peak = 0

    async def ascore_batch(self, cases):
        cls = type(self)
        cls.now += 1
        cls.peak = max(cls.peak, cls.now)
        try:
            await asyncio.sleep(0.002)
        finally:
            cls.now -= 1
        return [Score(value=1.0) for _ in cases]


class Plugin:
    @hookimpl
    def register_scorers(self, register):
        register(PendingBatches)


@pytest.fixture
def streaming_app(scripted_plugin):
    scripted_plugin.register_plugin(Plugin(), name="streaming_probe")
    return scripted_plugin


def jsonl(path, n, **extra):
    return write(path, "".join(json.dumps({"id": f"c{i}", "candidate": "x", "reference": "x", **extra}) + "\n"
                               for i in range(n)))


def test_batches_in_flight_are_bounded_by_the_concurrency(streaming_app, tmp_path):
    PendingBatches.now = PendingBatches.peak = 0
    result = streaming_app.evaluate(str(jsonl(tmp_path / "c.jsonl", 400)), ["pending_batches"], concurrency=2)
    assert result.status == "completed" and result.scorers["pending_batches"]["count"] == 400
    # 100 batches; before streaming all of them were pending at once
    assert 2 <= PendingBatches.peak <= 4


def test_cases_are_read_a_window_at_a_time_in_suite_order(streaming_app, tmp_path):
    result = streaming_app.evaluate(str(jsonl(tmp_path / "c.jsonl", 2500)), ["contains"])
    store = streaming_app.open_store()
    run = store.get_run(result.run_id)
    windows = list(store.iter_run_cases(run.id, run.suite_id, window=1000))
    assert [len(w) for w in windows] == [1000, 1000, 500]
    assert [c.id for w in windows for c in w] == [f"c{i}" for i in range(2500)]


def test_a_run_stopped_while_storing_its_cases_resumes_with_every_case(streaming_app, tmp_path):
    from evalyard.runner import Runner

    path = jsonl(tmp_path / "c.jsonl", 12_000)
    plan = streaming_app.plan(str(path), ["contains"])
    store = streaming_app.open_store()
    runner = Runner(store, streaming_app.registry)
    run_id = runner.create(plan.suite, plan.scorers, settings={})
    run = store.get_run(run_id)
    # what a kill part-way through the first stage leaves: the suite's first chunks and candidates
    store.store_cases(run.suite_id, run_id, itertools.islice(plan.suite.iter_cases(), 7000), suite_cases=True)
    assert store.candidate_count(run_id) == 7000

    result = CliRunner().invoke(cli, ["run", "--resume", run_id, "--json"], obj=streaming_app)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["status"] == "completed" and data["scorers"]["contains"]["count"] == 12_000
    assert store.candidate_count(run_id) == store.stored_case_count(run.suite_id) == 12_000
    assert store.result_count(run_id) == 12_000


def test_a_changed_file_is_not_read_again_for_a_run_stopped_while_storing(streaming_app, tmp_path):
    from evalyard.runner import Runner

    path = jsonl(tmp_path / "c.jsonl", 50)
    plan = streaming_app.plan(str(path), ["contains"])
    store = streaming_app.open_store()
    run_id = Runner(store, streaming_app.registry).create(plan.suite, plan.scorers, settings={})
    jsonl(path, 51)
    result = CliRunner().invoke(cli, ["run", "--resume", run_id], obj=streaming_app)
    assert result.exit_code == 2 and "has changed since" in result.output
    assert store.result_count(run_id) == 0


@pytest.mark.parametrize("bad_line, error", [
    ('{"id": "c5", "candidate": "x", "reference": "x"}', "field 'id': duplicate case id 'c5'"),
    ('{"id": "z", "candidate": "x"}', "field 'reference': case 'z' has no reference"),
    ('{"id": "z", "candidate": 5, "reference": "x"}', "field 'candidate': expected text"),
])
def test_bad_input_late_in_a_file_stores_nothing(installed_plugins, app, tmp_path, bad_line, error):
    path = jsonl(tmp_path / "c.jsonl", 3000)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(bad_line + "\n")
    result = CliRunner().invoke(cli, ["run", str(path), "-s", "exact_match"], obj=app)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == [lines[0]] and f"{path}:3001: {error}" in lines[0]
    assert app.open_store().list_runs(limit=None) == []


def test_results_are_a_lazy_sequence(streaming_app, tmp_path):
    result = streaming_app.evaluate(str(jsonl(tmp_path / "c.jsonl", 30)), ["contains", "scripted"])
    results = result.results
    assert not isinstance(results, list) and len(results) == 60
    everything = list(results)
    assert len(everything) == 60 and {r["scorer"] for r in everything} == {"contains", "scripted"}
    assert results[0] == everything[0] and results[-1] == everything[-1]
    assert results[10:13] == everything[10:13] and results.page(58, 10) == everything[58:]
    with pytest.raises(IndexError):
        results[60]


@dataclass
class Row:
    value: float | None
    label: str | None = None
    passed: bool | None = None
    error: str | None = None


def test_summaries_past_the_bootstrap_limit_keep_no_values_and_agree_with_the_bootstrap():
    import random

    rng = random.Random(3)
    values = [rng.random() ** 2 for _ in range(BOOTSTRAP_LIMIT + 1)]
    large = summarize(Row(v) for v in values)
    small = summarize(Row(v) for v in values[:BOOTSTRAP_LIMIT])
    assert large["scored"] == BOOTSTRAP_LIMIT + 1 and large["mean"] == pytest.approx(sum(values) / len(values))
    assert large["min"] == min(values) and large["max"] == max(values)
    # at this n the normal interval and the bootstrap's agree closely
    low, high = bootstrap_ci(values)
    assert large["ci95"] == pytest.approx([low, high], abs=0.002)
    assert small["ci95"] == list(bootstrap_ci(values[:BOOTSTRAP_LIMIT]))


@pytest.mark.parametrize("n", [300, BOOTSTRAP_LIMIT + 300])
def test_stored_summaries_equal_the_streamed_ones(db_url, n):
    """Past the bootstrap limit the database computes a run's summary; it must agree with the
    one-pass summary of the same rows (and below it, be that summary exactly)."""
    import random

    from evalyard import Suite
    from evalyard.store import Store

    store = Store(db_url)
    suite = Suite(name="s", cases=[Case(id="c0", candidate="x")])
    run_id = store.create_run(store.ensure_suite(suite), suite.cases, name="r", scorers=[], versions={}, source="")
    rng = random.Random(n)
    rows = []
    for i in range(n):
        error = "boom" if i % 97 == 0 else None
        value = None if error else rng.choice([0.0, 0.25, 1.0, rng.random()])
        rows.append({"case_id": f"c{i}", "scorer": "x", "value": value,
                     "label": None if error else ("high" if value >= 0.5 else "low"),
                     "passed": None if error else value >= 0.5, "details": {}, "error": error, "usage": None,
                     "duration_ms": 0.1})
    for start in range(0, n, 5000):
        store.write_results(run_id, rows[start:start + 5000])
    stored, streamed = store.summary(run_id, "x"), summarize(store.outcomes(run_id, "x"))
    if n <= BOOTSTRAP_LIMIT:
        assert stored == streamed
    else:
        assert {k: v for k, v in stored.items() if k not in ("mean", "std", "ci95")} == \
               {k: v for k, v in streamed.items() if k not in ("mean", "std", "ci95")}
        assert stored["mean"] == pytest.approx(streamed["mean"], rel=1e-9)
        assert stored["std"] == pytest.approx(streamed["std"], rel=1e-9)
        assert stored["ci95"] == pytest.approx(streamed["ci95"], rel=1e-9)
    assert stored["errors"] == len(range(0, n, 97)) and stored["count"] == n
    store.close()
