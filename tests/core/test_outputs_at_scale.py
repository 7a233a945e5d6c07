"""Outputs of a large run through real databases (SQLite file, real PostgreSQL): the streamed
export equals a naive in-memory reference, Parquet reads back equal to JSONL, ``runs show``
reads stored totals or SQL aggregates, and the bounded queries the report and dashboard use."""

from __future__ import annotations

import csv
import json
import math
import random

import pytest
from click.testing import CliRunner

from evalyard.cli import cli
from evalyard.report.synthetic import BULK_SCORERS, write_bulk_run
from evalyard.analysis.stats import summarize
from evalyard.store import Store
from evalyard.store import reading

CASES = 20_000


def _shuffled_run(store: Store, cases: int) -> str:
    """A bulk run whose results were written in a shuffled order and with the scorers swapped,
    so neither insertion order nor scorer name gives the export order by accident."""
    from sqlalchemy import delete, insert, select

    from evalyard.store.models import ResultRow, RunRow

    run_id = write_bulk_run(store, cases)
    with store.engine.begin() as connection:
        rows = [dict(r._mapping) for r in connection.execute(select(ResultRow).where(ResultRow.run_id == run_id))]
        connection.execute(delete(ResultRow).where(ResultRow.run_id == run_id))
        random.Random(3).shuffle(rows)
        for row in rows:
            row.pop("id")
        connection.execute(insert(ResultRow), rows)
        # the run's scorer order is not alphabetical: overlap first
        connection.execute(RunRow.__table__.update().where(RunRow.id == run_id)
                           .values(scorers=list(reversed(BULK_SCORERS))))
    return run_id


def _reference(store: Store, run_id: str) -> list[dict]:
    """The export as earlier versions built it: every ORM row, sorted in memory."""
    run = store.get_run(run_id)
    order = store.case_order(run)
    scorer_order = {s["name"]: i for i, s in enumerate(run.scorers)}
    rows = sorted(store.results(run.id), key=lambda r: (order.get(r.case_id, 0), scorer_order.get(r.scorer, 0)))
    # these cases hold no images or audio: their export's media is null
    return [{f: getattr(r, f, None) if f != "media" else None for f in reading.EXPORT_COLUMNS} for r in rows]


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def big(request, tmp_path_factory):
    """One large run per database for the whole module (building it is most of the time)."""
    if request.param == "sqlite":
        db_url = f"sqlite:///{tmp_path_factory.mktemp('outputs') / 'big.db'}"
    else:
        db_url = request.getfixturevalue("postgres_server").create_database("evalyard_outputs_at_scale")
    store = Store(db_url)
    run_id = _shuffled_run(store, CASES)
    yield store, run_id, db_url
    store.close()


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_export_streams_in_suite_and_scorer_order(big, tmp_path):
    store, run_id, db_url = big
    expected = _reference(store, run_id)
    assert len(expected) == 2 * CASES
    assert [r["scorer"] for r in expected[:2]] == ["overlap", "exact_match"]
    lines = _invoke("runs", "export", run_id, "--db", db_url).splitlines()
    assert [json.loads(line) for line in lines] == expected
    # CSV: the same rows, the same cells as before
    out = tmp_path / "results.csv"
    _invoke("runs", "export", run_id, "--db", db_url, "--format", "csv", "-o", str(out))
    with out.open(newline="", encoding="utf-8") as handle:
        table = list(csv.reader(handle))
    assert table[0] == list(reading.EXPORT_COLUMNS)
    assert [row[:2] for row in table[1:]] == [[r["case_id"], r["scorer"]] for r in expected]
    first = next(r for r in expected if r["value"] is not None and r["value"] not in (0.0, 1.0))
    row = next(row for row in table[1:] if row[:2] == [first["case_id"], first["scorer"]])
    assert row[2] == repr(first["value"]) and row[4] == str(first["passed"]).lower()


def test_parquet_reads_back_equal_to_jsonl(big, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    store, run_id, db_url = big
    jsonl = [json.loads(line) for line in _invoke("runs", "export", run_id, "--db", db_url).splitlines()]
    path = tmp_path / "results.parquet"
    from evalyard.exporting import write_parquet

    written = write_parquet(reading.export_rows(store, store.get_run(run_id)), str(path), row_group=7_000)
    assert written == len(jsonl)
    parquet = pq.ParquetFile(path)
    assert parquet.metadata.num_row_groups == math.ceil(len(jsonl) / 7_000)  # written as it streamed
    assert parquet.schema_arrow.names == list(reading.EXPORT_COLUMNS)
    rows = parquet.read().to_pylist()
    for row in rows:
        row["details"] = json.loads(row["details"])
    assert rows == jsonl
    # and through the command
    _invoke("runs", "export", run_id, "--db", db_url, "--format", "parquet", "-o", str(tmp_path / "cli.parquet"))
    assert pq.read_table(tmp_path / "cli.parquet").num_rows == len(jsonl)


def test_runs_show_reads_stored_totals_and_live_aggregates(big):
    store, run_id, db_url = big
    shown = json.loads(_invoke("runs", "show", run_id, "--db", db_url, "--json"))
    assert shown["scorers"] == store.get_run(run_id).totals["scorers"]
    live = reading.live_summaries(store, run_id, [s["name"] for s in BULK_SCORERS])
    for name in live:
        expected = summarize(store.outcomes(run_id, name))
        got = live[name]
        for key in ("count", "scored", "errors", "passed", "labels", "min", "max", "pass_rate"):
            assert got[key] == expected[key], key
        for key in ("mean", "std"):
            assert got[key] == pytest.approx(expected[key], rel=1e-9)
        assert got["ci95"] == pytest.approx(expected["ci95"], rel=1e-6)


def test_runs_show_of_a_running_run_says_its_statistics_are_live(db_url):
    store = Store(db_url)
    run_id = write_bulk_run(store, 300, status="running")
    text = _invoke("runs", "show", run_id, "--db", db_url)
    assert "live statistics of a running run" in text
    data = json.loads(_invoke("runs", "show", run_id, "--db", db_url, "--json"))
    expected = summarize(store.outcomes(run_id, "overlap"))
    assert data["scorers"]["overlap"]["count"] == expected["count"]
    assert data["scorers"]["overlap"]["mean"] == pytest.approx(expected["mean"])
    assert data["scorers"]["overlap"]["ci95"] == expected["ci95"]  # 300 results: the bootstrap, as at the end
    store.close()


def test_bounded_queries_match_a_naive_scan(big):
    store, run_id, _ = big
    run = store.get_run(run_id)
    order = store.case_order(run)
    rows = list(store.results(run_id, "overlap"))
    scored = sorted((r.value, r.case_id) for r in rows if r.error is None and r.value is not None)
    assert reading.worst_case_ids(store, run_id, "overlap", limit=50) == [c for _, c in scored[:50]]
    failing = sorted((order[r.case_id], r.case_id) for r in rows if r.error is not None or r.passed is False)
    assert reading.failing_case_ids(store, run, "overlap", limit=50) == [c for _, c in failing[:50]]
    counts = reading.histogram(store, run_id, "overlap", 0.0, 1.0, 12)
    naive = [0] * 12
    for value, _ in scored:
        naive[min(11, int(value * 12))] += 1
    assert counts == naive
    sample = reading.sample_case_ids(store, run, CASES, size=200)
    assert len(sample) == 200 and sample == sorted(sample, key=order.get) and sample[0] == "case-0000000"
    page, more = reading.page_case_ids(store, run, page=1, size=50)
    assert more and page == [f"case-{i:07d}" for i in range(50, 100)]


def test_parquet_without_pyarrow_is_a_one_line_error(monkeypatch, tmp_path):
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # what a missing package looks like to import
    result = CliRunner().invoke(cli, ["runs", "export", "any", "--format", "parquet", "--db", str(tmp_path / "x.db")])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == ["Error: --format parquet needs pyarrow: pip install 'evalyard[parquet]'"]
