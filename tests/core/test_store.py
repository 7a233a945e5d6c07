"""The store against SQLite and a real PostgreSQL server: schema, writes, uniqueness, CLI runs."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from testutil import write
from evalyard import Case, Suite
from evalyard.cli import cli
from evalyard.store import Store


def make_suite(n=3, name="s"):
    return Suite(name=name, cases=[Case(id=f"c{i}", input=f"q{i}", candidate=f"a{i}", reference=f"r{i}",
                                        context=[f"p{i}"], metadata={"k": i}) for i in range(n)])


@pytest.mark.parametrize("create_new_directly", [False, True], ids=["migrations", "create_all+stamp"])
def test_schema_matches_models(db_url, create_new_directly):
    """The migration chain and the SQLModel tables build the same schema (a model change needs a migration)."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext
    from sqlalchemy import create_engine

    from evalyard.store import HEAD_REVISION, migrate
    from evalyard.store.models import SQLModel

    engine = create_engine(db_url)
    migrate(engine, create_new_directly=create_new_directly)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection)
        assert context.get_current_revision() == HEAD_REVISION
        assert compare_metadata(context, SQLModel.metadata) == []
    engine.dispose()


def test_suites_runs_results_roundtrip(db_url):
    store = Store(db_url)
    suite = make_suite()
    suite_id = store.ensure_suite(suite)
    assert store.ensure_suite(make_suite()) == suite_id  # same content, same version
    changed = make_suite()
    changed.cases[0].reference = "other"
    assert store.ensure_suite(changed) != suite_id
    run_id = store.create_run(suite_id, suite.cases, name="r1", scorers=[{"name": "x"}], versions={}, source="t")
    rows = [{"case_id": "c0", "scorer": "x", "value": 0.5, "label": None, "passed": True,
             "details": {"nested": {"list": [1, 2]}, "text": "é✓"}, "error": None, "usage": None, "duration_ms": 1.0}]
    store.write_results(run_id, rows)
    # (run, case, scorer) is unique: a batch written again (retried after its first attempt
    # committed) adds nothing and changes nothing
    store.write_results(run_id, [dict(rows[0], value=0.9)])
    assert store.done_pairs(run_id) == {("c0", "x")} == store.done_pairs(run_id, ["c0", "c1"])
    assert store.done_pairs(run_id, ["c1"]) == set()
    assert [r.value for r in store.results(run_id)] == [0.5]
    (result,) = list(store.results(run_id))
    assert result.details == {"nested": {"list": [1, 2]}, "text": "é✓"} and result.passed is True
    store.write_results(run_id, [
        {"case_id": "c1", "scorer": "x", "value": None, "label": None, "passed": None, "details": {},
         "error": "boom", "usage": None, "duration_ms": 1.0},
        {"case_id": "c2", "scorer": "x", "value": 0.0, "label": "fail", "passed": False, "details": {},
         "error": None, "usage": None, "duration_ms": 1.0},
        {"case_id": "c0", "scorer": "y", "value": 1.0, "label": None, "passed": True, "details": {},
         "error": None, "usage": None, "duration_ms": 1.0},
    ])
    # what a summary reads: one scorer's (value, label, passed, error), in the order written
    assert [tuple(o) for o in store.outcomes(run_id, "x")] == [
        (0.5, None, True, None), (None, None, None, "boom"), (0.0, "fail", False, None)]
    assert [o.value for o in store.outcomes(run_id, "y")] == [1.0]
    cases = store.run_cases(store.get_run("r1"))
    assert [c.to_dict() for c in cases] == [c.to_dict() for c in suite.cases]
    store.delete_run(run_id)
    assert store.list_runs() == []
    store.close()


def test_cli_run_against_database_url(db_url, tmp_path):
    path = write(tmp_path / "c.jsonl", '{"id": "a", "candidate": "{}"}\n{"id": "b", "candidate": "no"}\n')
    result = CliRunner().invoke(cli, ["run", str(path), "-s", "json_valid", "--json", "--db", db_url])
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.output)["run_id"]
    listed = json.loads(CliRunner().invoke(cli, ["runs", "list", "--json", "--db", db_url]).output)
    assert [r["run_id"] for r in listed] == [run_id] and listed[0]["means"] == {"json_valid": 0.5}


def test_suite_version_ignores_candidates():
    a, b = make_suite(), make_suite()
    b.cases[0].candidate = "a different output"
    assert a.version == b.version
    b.cases[0].metadata["k"] = 99
    assert a.version != b.version


def test_head_revision_constant_matches_migration_scripts():
    from pathlib import Path

    from alembic.config import Config
    from alembic.script import ScriptDirectory

    import evalyard.store as store_module

    config = Config()
    config.set_main_option("script_location", str(Path(store_module.__file__).parent.parent / "migrations"))
    assert ScriptDirectory.from_config(config).get_current_head() == store_module.HEAD_REVISION


def test_a_summary_does_not_depend_on_the_order_results_were_stored(db_url):
    """Results land in the order their batches finish, which scheduling decides; the same values
    must give the same mean and interval whatever that order (the bootstrap is seeded, and it
    resamples positions, so it reads the results by case id)."""
    import random

    store = Store(db_url)
    suite = make_suite(n=40)
    suite_id = store.ensure_suite(suite)
    rng = random.Random(5)
    values = [rng.random() for _ in range(40)]
    rows = [{"case_id": f"c{i}", "scorer": "x", "value": v, "label": None, "passed": None, "details": None,
             "error": None, "usage": None, "duration_ms": 1.0} for i, v in enumerate(values)]
    summaries = []
    for order in (rows, rows[::-1], random.Random(1).sample(rows, len(rows))):
        run_id = store.create_run(suite_id, suite.cases, name="r", scorers=[{"name": "x"}], versions={}, source="t")
        for row in order:
            store.write_results(run_id, [row])
        summaries.append(store.summary(run_id, "x"))
    assert summaries[0]["ci95"] == summaries[1]["ci95"] == summaries[2]["ci95"]
    assert summaries[0]["mean"] == pytest.approx(sum(values) / 40)
