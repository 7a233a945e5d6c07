"""``runs export --trials``: a run made with ``--epochs N`` exports one row per (case, epoch,
scorer) in every table format (JSONL, CSV, Parquet), with the epoch's generated output, equal to
the trials the store holds, streamed from one ordered query; a run without epochs, or a format
that is not a table, is one line and exit 2; without the flag the export is what it was."""

from __future__ import annotations

import csv
import json

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from evalyard.cli import cli
from evalyard.store.reading import EXPORT_COLUMNS
from evalyard.store.trials import TRIAL_COLUMNS

QUESTIONS = {f"q{i}": (f"What is {i} times 3?", str(3 * i)) for i in range(5)}
SCORERS = ("regex_match:pattern=^It is", "contains")  # not alphabetical: the run's order is kept


def invoke(app, *args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj=app, catch_exceptions=False)


@pytest.fixture
def suite(tmp_path):
    path = tmp_path / "times.jsonl"
    # listed out of id order, so the export's case order is the suite's, not the ids'
    path.write_text("".join(json.dumps({"id": case_id, "input": question, "reference": answer}) + "\n"
                            for case_id, (question, answer) in reversed(QUESTIONS.items())))
    return str(path)


@pytest.fixture
def noisy(rules):
    """Right on a question's first two calls, wrong after: each case's three epochs differ."""
    return rules([rule for q, a in QUESTIONS.values()
                  for rule in ({"contains": q, "content": f"It is {a}.", "times": 2},
                               {"contains": q, "content": "I am not sure."})], name="noisy")


@pytest.fixture
def epoch_run(app, suite, noisy):
    args = ["run", suite, "-m", noisy, "--epochs", "3", "--json"]
    for scorer in SCORERS:
        args += ["-s", scorer]
    result = invoke(app, *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["run_id"]


def stored_trials(app, run_id: str) -> list[dict]:
    """The store's trials and outputs, read as whole tables and ordered here: the reference."""
    from evalyard.store.models import TrialOutputRow, TrialRow

    store = app.open_store()
    run = store.get_run(run_id)
    position = store.case_order(run)
    scorer_rank = {s["name"]: i for i, s in enumerate(run.scorers)}
    with store.engine.connect() as connection:
        outputs = {(o.case_id, o.epoch): o for o in connection.execute(
            select(TrialOutputRow).where(TrialOutputRow.run_id == run_id))}
        trials = list(connection.execute(select(TrialRow).where(TrialRow.run_id == run_id)))
    trials.sort(key=lambda t: (position[t.case_id], t.epoch, scorer_rank[t.scorer]))
    rows = []
    for t in trials:
        output = outputs.get((t.case_id, t.epoch))
        rows.append({"case_id": t.case_id, "epoch": t.epoch, "scorer": t.scorer, "value": t.value, "label": t.label,
                     "passed": t.passed, "details": t.details, "error": t.error,
                     "output": output.text if output else None, "output_error": output.error if output else None})
    return rows


def test_jsonl_holds_every_stored_trial_with_its_output(app, epoch_run):
    expected = stored_trials(app, epoch_run)
    assert len(expected) == len(QUESTIONS) * 3 * len(SCORERS)
    result = invoke(app, "runs", "export", epoch_run, "--trials")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert rows == expected
    assert list(rows[0]) == list(TRIAL_COLUMNS)
    # suite order (q4 first), then epoch, then the run's scorer order
    assert [(r["case_id"], r["epoch"], r["scorer"]) for r in rows[:4]] == [
        ("q4", 0, "regex_match"), ("q4", 0, "contains"), ("q4", 1, "regex_match"), ("q4", 1, "contains")]
    q1 = [r for r in rows if r["case_id"] == "q1" and r["scorer"] == "contains"]
    assert sorted(r["output"] for r in q1) == ["I am not sure.", "It is 3.", "It is 3."]
    assert sorted(r["value"] for r in q1) == [0.0, 1.0, 1.0]  # the spread the reduced result hides
    reduced = [json.loads(line) for line in invoke(app, "runs", "export", epoch_run).stdout.splitlines()]
    assert next(r for r in reduced if r["case_id"] == "q1" and r["scorer"] == "contains")["value"] == \
        pytest.approx(2 / 3)


def test_csv_holds_every_stored_trial(app, epoch_run, tmp_path):
    expected = stored_trials(app, epoch_run)
    out = tmp_path / "trials.csv"
    result = invoke(app, "runs", "export", epoch_run, "--trials", "--format", "csv", "-o", out)
    assert result.exit_code == 0, result.output
    with out.open(newline="", encoding="utf-8") as handle:
        table = list(csv.reader(handle))
    assert table[0] == list(TRIAL_COLUMNS)

    def cells(row: dict) -> list[str]:
        return [row["case_id"], str(row["epoch"]), row["scorer"], "" if row["value"] is None else repr(row["value"]),
                row["label"] or "", "" if row["passed"] is None else str(row["passed"]).lower(),
                json.dumps(row["details"], ensure_ascii=False), row["error"] or "", row["output"] or "",
                row["output_error"] or ""]

    assert table[1:] == [cells(row) for row in expected]


def test_parquet_holds_every_stored_trial(app, epoch_run, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    expected = stored_trials(app, epoch_run)
    out = tmp_path / "trials.parquet"
    result = invoke(app, "runs", "export", epoch_run, "--trials", "--format", "parquet", "-o", out)
    assert result.exit_code == 0, result.output
    table = pq.read_table(out)
    assert table.schema.names == list(TRIAL_COLUMNS)
    assert str(table.schema.field("epoch").type) == "int64"
    rows = table.to_pylist()
    for row in rows:
        row["details"] = json.loads(row["details"])
    assert rows == expected


def test_without_the_flag_the_export_is_unchanged(app, epoch_run):
    rows = [json.loads(line) for line in invoke(app, "runs", "export", epoch_run).stdout.splitlines()]
    assert len(rows) == len(QUESTIONS) * len(SCORERS)
    assert all(list(row) == list(EXPORT_COLUMNS) for row in rows)


def test_a_run_without_epochs_has_no_trials(app, suite, noisy):
    made = invoke(app, "run", suite, "-s", "contains", "-m", noisy, "--json")
    assert made.exit_code == 0, made.output
    run_id = json.loads(made.stdout)["run_id"]
    for fmt in ("jsonl", "csv"):
        result = invoke(app, "runs", "export", run_id, "--trials", "--format", fmt)
        assert result.exit_code == 2
        assert result.output.strip().splitlines() == [
            f"Error: run {run_id} ({json.loads(made.stdout)['name']}) has no trials: it was not made with "
            "--epochs N; export it without --trials"]


def test_trials_need_a_table_format(app, epoch_run):
    result = invoke(app, "runs", "export", epoch_run, "--trials", "--format", "junit")
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "Error: --trials needs a table format (jsonl, csv, parquet); junit writes the run's results"]


def test_thousands_of_trials_stream_from_the_query(app, tmp_path, monkeypatch):
    """6,000 trials (1,000 cases with their own candidates, 3 epochs, 2 scorers) export equal to
    the store, read from the cursor a chunk at a time: never fetched as one list."""
    cases = 1000
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps({"id": f"c{i:04d}", "input": f"question {i}", "reference": str(i % 7),
                                        "candidate": f"answer {i % 5}"}) + "\n" for i in range(cases)))
    made = invoke(app, "run", path, "-s", "contains", "-s", "regex_match:pattern=1$", "--epochs", "3", "--json")
    assert made.exit_code == 0, made.output
    run_id = json.loads(made.stdout)["run_id"]
    expected = stored_trials(app, run_id)
    assert len(expected) == cases * 3 * 2

    from sqlalchemy.engine import CursorResult

    from evalyard.store import reading

    def refuse(self, *args, **kwargs):
        raise AssertionError("the trials were fetched as one list")

    for name in ("all", "fetchall"):
        monkeypatch.setattr(CursorResult, name, refuse)
    monkeypatch.setattr(reading, "CHUNK", 500)  # several chunks
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    options = []

    def seen(conn, cursor, statement, parameters, context, executemany):
        if "FROM trials" in statement and "LIMIT" not in statement:
            options.append(dict(context.execution_options))

    event.listen(Engine, "before_cursor_execute", seen)
    out = tmp_path / "trials.jsonl"
    try:
        result = invoke(app, "runs", "export", run_id, "--trials", "-o", out)
    finally:
        event.remove(Engine, "before_cursor_execute", seen)
    assert result.exit_code == 0, result.output
    assert len(options) == 1 and options[0].get("yield_per") == 500 and options[0].get("stream_results")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows == expected
    assert all(row["output"] is None for row in rows)  # nothing generated: the cases' own candidates
