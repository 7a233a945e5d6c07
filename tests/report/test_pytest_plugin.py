"""evalyard's pytest plugin: loaded through its pytest11 entry point, its fixtures run real
suites into a temporary database, and assert_scores reports every missed check."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from evalyard.pytest_plugin import assert_scores
from testutil import ROOT, write

QUICKSTART = str(ROOT / "examples" / "quickstart.yaml")


def test_assert_scores_checks_means_and_named_statistics():
    run = {"scorers": {"exact_match": {"mean": 0.85, "pass_rate": 0.85, "errors": 0},
                       "hedging": {"mean": 0.2, "pass_rate": None, "errors": 1}}}
    assert_scores(run, exact_match=">=0.8", hedging="< 0.3")
    assert_scores(run, exact_match=0.8, hedging="errors==1")
    with pytest.raises(AssertionError) as missed:
        assert_scores(run, exact_match="pass_rate>=0.9", hedging="pass_rate>0", nope=">=1")
    message = str(missed.value)
    assert "exact_match: pass_rate is 0.85, expected >= 0.9" in message
    assert "hedging: pass_rate is None" in message
    assert "nope: not part of this run" in message
    with pytest.raises(ValueError, match="expected e.g."):
        assert_scores(run, exact_match="about 0.8")


def test_run_fixture_scores_a_suite_into_the_temporary_database(evalyard_run, evalyard_store, evalyard_db):
    run = evalyard_run(QUICKSTART, scorers=["exact_match", "word_count_match"], name="from-pytest")
    assert run.status == "completed" and run.exit_code == 0 and run.db == evalyard_db
    assert_scores(run, exact_match="==0.1", word_count_match="count==20")
    stored = evalyard_store.get_run("from-pytest")
    assert stored.id == run.id and stored.totals["scorers"]["exact_match"]["mean"] == 0.1
    assert_scores(stored, exact_match="<=0.1")
    matched = [r.case_id for r in run.results("exact_match") if r.value == 1.0]
    assert len(matched) == 2 and "capital-fr" in matched


def test_plugin_loads_by_entry_point_in_a_fresh_pytest(tmp_path):
    """What a user's own test file gets: the fixtures by name, no conftest, no import."""
    suite = write(tmp_path / "suite.yaml", json.dumps({
        "name": "mine", "scorers": ["exact_match"],
        "cases": [{"id": "a", "candidate": "Paris", "reference": "Paris"},
                  {"id": "b", "candidate": "Lyon", "reference": "Paris"}]}))
    write(tmp_path / "test_mine.py", f"""
from evalyard.pytest_plugin import assert_scores

def test_quality(evalyard_run):
    run = evalyard_run({str(suite)!r})
    assert_scores(run, exact_match=">=0.5")

def test_too_strict(evalyard_run):
    assert_scores(evalyard_run({str(suite)!r}), exact_match=">=0.9")
""")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "test_mine.py")],
                          capture_output=True, text=True, cwd=tmp_path)
    assert "1 failed, 1 passed" in done.stdout, done.stdout + done.stderr
    assert "exact_match: mean is 0.5, expected >= 0.9" in done.stdout


def test_scripted_model_fixture_writes_checked_rules(evalyard_scripted_model):
    model = evalyard_scripted_model([{"contains": "capital", "content": {"verdict": "yes"}}], name="judge")
    assert model.startswith("scripted/") and model.endswith("scripted-judge.jsonl")
    from evalyard.testing.scripted import RulesError

    with pytest.raises(RulesError):
        evalyard_scripted_model([{"contains": "x"}], name="bad")  # neither content nor error
