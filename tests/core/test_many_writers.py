"""Many writers: eight `evalyard run` processes of one new suite, started together on one new
database (a CI matrix, a team sharing a PostgreSQL server), all complete.

The races this guards are in opening a new database (two processes creating the schema at once)
and in storing a new suite (two processes inserting the same suite and case rows at once).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, select
from sqlalchemy.exc import IntegrityError

from testutil import write
from evalyard.store import HEAD_REVISION, Store, _insert_ignoring_duplicates_portably, insert_ignoring_duplicates
from evalyard.store.models import CaseRow, ResultRow, RunRow, SuiteRow

WRITERS = 8
CASES = 200
SCORERS = ("exact_match", "word_count_match")  # evalyard-lexicon's: cheap, no model
DEADLINE_S = 120


def test_eight_writers_on_a_new_database(db_url, tmp_path, cli_env, evalyard_exe):
    suite = write(tmp_path / "writers.jsonl", "".join(
        json.dumps({"id": f"case-{i}", "candidate": f"answer {i % 7}", "reference": f"answer {i % 5}"}) + "\n"
        for i in range(CASES)))
    env = dict(cli_env, EVALYARD_LOAD_PLUGINS="lexicon")
    command = [evalyard_exe, "run", str(suite), "--db", db_url, "--json"]
    for scorer in SCORERS:
        command += ["-s", scorer]
    # All started before any is waited for: each spends its first few hundred ms importing,
    # so they reach the new database within the same instant (that is how the races showed).
    processes = []
    for i in range(WRITERS):
        out, err = (tmp_path / f"writer{i}.out").open("w"), (tmp_path / f"writer{i}.err").open("w")
        processes.append(subprocess.Popen(command + ["--name", f"writer{i}"], env=env, stdout=out, stderr=err))
    codes = _wait_all(processes, DEADLINE_S)
    stderr = [(tmp_path / f"writer{i}.err").read_text() for i in range(WRITERS)]
    failed = {i: text.strip()[-600:] for i, (code, text) in enumerate(zip(codes, stderr)) if code != 0}
    assert not failed, f"{len(failed)} of {WRITERS} writers failed: {failed}"
    assert not [text for text in stderr if "Traceback" in text]
    summaries = [json.loads((tmp_path / f"writer{i}.out").read_text()) for i in range(WRITERS)]
    assert {s["status"] for s in summaries} == {"completed"}

    engine = create_engine(db_url)
    try:
        with engine.connect() as connection:
            def count(query):
                return connection.execute(query).scalar_one()

            assert count(select(func.count()).select_from(SuiteRow)) == 1
            assert count(select(func.count()).select_from(CaseRow)) == CASES
            assert count(select(func.count(func.distinct(CaseRow.case_id)))) == CASES
            statuses = connection.execute(select(RunRow.status)).scalars().all()
            assert statuses == ["completed"] * WRITERS
            results = count(select(func.count()).select_from(ResultRow))
            distinct = count(select(func.count()).select_from(
                select(ResultRow.run_id, ResultRow.case_id, ResultRow.scorer).distinct().subquery()))
            assert results == distinct == WRITERS * CASES * len(SCORERS)
    finally:
        engine.dispose()


def _wait_all(processes, deadline_s):
    deadline = time.monotonic() + deadline_s
    try:
        return [p.wait(timeout=max(0.1, deadline - time.monotonic())) for p in processes]
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
                p.wait()


def test_an_old_database_opened_by_several_processes_is_upgraded_once(db_url, cli_env):
    """The Alembic path under the lock: a database at the previous revision, opened by three
    processes at once, is upgraded by exactly one of them (the only one that imports Alembic:
    the others find it done, after waiting for the lock or not)."""
    from alembic import command
    from alembic.config import Config

    import evalyard.store as store_module

    engine = create_engine(db_url)
    config = Config()
    config.set_main_option("script_location", str(Path(store_module.__file__).parent.parent / "migrations"))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0003_calibrations")
    engine.dispose()
    opener = ("import sys; from evalyard.store import Store; Store(sys.argv[1]).close(); "
              "print('alembic' in sys.modules)")
    processes = [subprocess.Popen([sys.executable, "-c", opener, db_url], env=cli_env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(3)]
    assert _wait_all(processes, DEADLINE_S) == [0] * 3, [p.stderr.read() for p in processes]
    assert sorted(p.stdout.read().strip() for p in processes) == ["False", "False", "True"]
    store = Store(db_url)
    with store.engine.connect() as connection:
        from sqlalchemy import inspect, text

        assert connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == [HEAD_REVISION]
        assert inspect(connection).has_table("batch_jobs")
    store.close()


@pytest.mark.parametrize("insert", [insert_ignoring_duplicates, _insert_ignoring_duplicates_portably],
                         ids=["on_conflict", "portable"])
def test_insert_ignoring_duplicates_keeps_the_first_row_and_raises_other_errors(db_url, insert):
    store = Store(db_url)
    suite_id = store.suite_id("s", "v1", description="", source="", case_count=3)
    assert store.suite_id("s", "v1", description="other", source="", case_count=3) == suite_id

    def rows(ids, position):
        return [{"suite_id": suite_id, "position": position, "case_id": i, "input": None, "reference": None,
                 "context": [], "metadata": {"from": position}} for i in ids]

    table = CaseRow.__table__  # the portable path takes a Table; the public helper also a model class
    with store.engine.begin() as connection:
        insert(connection, table, rows(["a", "b"], 0), ("suite_id", "case_id"))
    with store.engine.begin() as connection:
        insert(connection, table, rows(["b", "c"], 1), ("suite_id", "case_id"))
    with store.engine.connect() as connection:
        stored = connection.execute(select(CaseRow.case_id, CaseRow.position).order_by(CaseRow.case_id)).all()
    assert [tuple(r) for r in stored] == [("a", 0), ("b", 0), ("c", 1)]  # "b" kept as first written
    with pytest.raises(IntegrityError):  # a clash that is no duplicate: no such suite
        with store.engine.begin() as connection:
            insert(connection, table, [dict(rows(["d"], 2)[0], suite_id=suite_id + 99)], ("suite_id", "case_id"))
    store.close()


def test_insert_ignoring_duplicates_takes_model_attribute_names(db_url):
    store = Store(db_url)
    suite_id = store.suite_id("s", "v1", description="", source="", case_count=1)
    row = {"suite_id": suite_id, "position": 0, "case_id": "a", "input": "q", "reference": None, "context": [],
           "case_metadata": {"k": 1}}
    for _ in range(2):
        with store.engine.begin() as connection:
            insert_ignoring_duplicates(connection, CaseRow, [row], ("suite_id", "case_id"))
    with store.engine.connect() as connection:
        assert connection.execute(select(CaseRow.case_metadata)).scalars().all() == [{"k": 1}]
    store.close()
