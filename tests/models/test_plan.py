"""`evalyard run --plan`: what a run would call, cost and take, with nothing called or stored.
Real layers: the scripted model and the fake OpenAI server behind litellm, a real SQLite file."""

from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner

import evalyard
from evalyard.cli import cli
from testutil import write

RULES = [{"contains": "Milan", "content": "Milan is not Rome.\nANSWER: no"},
         {"content": "The response matches the reference.\nANSWER: yes"}]
TABLES = ("runs", "results", "model_calls", "cases", "suites", "candidates")


def invoke(app, *args):
    return CliRunner().invoke(cli, list(args), obj=app, catch_exceptions=False)


def cases(n: int, first: int = 0) -> str:
    return "".join(json.dumps({"id": f"q{i}", "input": f"Capital number {i}?", "candidate": f"City {i}",
                               "reference": f"City {i}"}) + "\n" for i in range(first, first + n))


def counts(db) -> dict[str, int]:
    with sqlite3.connect(db) as connection:
        return {t: connection.execute(f"select count(*) from {t}").fetchone()[0] for t in TABLES}


def plan(app, *args) -> dict:
    result = invoke(app, "run", *args, "--plan", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["plan"]


@pytest.fixture
def judge(app):
    evalyard.register_prompt_scorer("judge", template="correctness", app=app)
    return "judge"


def test_calls_and_cache_hits_are_exact_and_nothing_is_stored(app, tmp_path, rules, judge, isolated_home):
    model = rules(RULES)
    data = write(tmp_path / "cases.jsonl", cases(4))
    db = isolated_home / "evalyard.db"
    first = plan(app, str(data), "-s", judge, "-s", "contains", "--judge-model", model)
    assert not db.exists()  # a plan creates no database
    line = {entry["name"]: entry for entry in first["lines"]}
    assert line["judge"]["models"][0]["calls"] == 4 and line["judge"]["models"][0]["cache_hits"] == 0
    assert line["contains"]["models"] == [] and line["contains"]["seconds"] is not None  # timed on a sample
    ran = json.loads(invoke(app, "run", str(data), "-s", judge, "--judge-model", model, "--json").stdout)
    assert ran["usage"]["calls"] == 4 and ran["usage"]["cache_hits"] == 0

    write(data, cases(7))  # three new cases: four calls the cache answers, three to make
    before = counts(db)
    again = plan(app, str(data), "-s", judge, "--judge-model", model)
    assert counts(db) == before  # not even a run row
    totals = again["totals"]
    assert (totals["calls"], totals["cache_hits"]) == (7, 4)
    ran = json.loads(invoke(app, "run", str(data), "-s", judge, "--judge-model", model, "--json").stdout)
    assert (ran["usage"]["calls"], ran["usage"]["cache_hits"]) == (7, 4)
    # the cache hits' tokens are the recorded ones; the scripted model counts words, the plan's
    # tokenizer (an estimate, said so) is scaled by how the two compared on the earlier calls
    assert totals["input_tokens"] == pytest.approx(ran["usage"]["prompt_tokens"], rel=0.05)
    basis = again["lines"][0]["models"][0]["input_basis"]
    assert basis.startswith("estimate") and "earlier calls" in basis
    assert again["lines"][0]["models"][0]["cost"] is None  # no price: unknown, never $0


def test_generated_candidates_from_the_cache_make_the_judges_keys_exact(app, tmp_path, rules, judge):
    model = rules(RULES)
    data = write(tmp_path / "questions.jsonl", "".join(
        json.dumps({"id": f"q{i}", "input": f"Capital number {i}?", "reference": f"City {i}"}) + "\n"
        for i in range(3)))
    options = [str(data), "-s", judge, "--judge-model", model, "--model", model]
    fresh = plan(app, *options)
    generator, judged = fresh["lines"]
    assert generator["kind"] == "generator" and generator["models"][0]["calls"] == 3
    # the candidates are not generated yet: the judge's calls are counted, their keys cannot be
    assert judged["models"][0]["calls"] == 3 and judged["models"][0]["calls_basis"].startswith("estimate")
    invoke(app, "run", *options)
    cached = plan(app, *options)
    assert [(m["calls"], m["cache_hits"], m["calls_basis"]) for line in cached["lines"] for m in line["models"]] == [
        (3, 3, "exact"), (3, 3, "exact")]


def test_unpriced_model_costs_unknown_and_a_priced_one_is_refused_over_the_cap(tmp_path, fake_server, isolated_home,
                                                                                 monkeypatch):
    server = fake_server(latency_ms=1)
    monkeypatch.setenv("FAKE_KEY", "sk-fake")  # the key the suite names: its application reads it as it starts
    app = evalyard.Application()
    evalyard.register_prompt_scorer("judge", template="correctness", app=app)
    write(tmp_path / "cases.jsonl", cases(5))
    suite = write(tmp_path / "suite.yaml", (
        f"name: priced\ndata: cases.jsonl\nscorers: [judge]\nmodels:\n"
        f"  openai/gpt-4o-mini: {{api_base: '{server.base_url}', api_key_env: FAKE_KEY}}\n"
        f"  openai/no-such-price: {{api_base: '{server.base_url}', api_key_env: FAKE_KEY}}\n"))
    text = invoke(app, "run", str(suite), "--judge-model", "openai/no-such-price", "--plan")
    assert text.exit_code == 0
    total = [line for line in text.stdout.splitlines() if line.startswith("total")][0]
    assert "unknown" in total and "$0.0000" not in total

    priced = plan(app, str(suite), "--judge-model", "openai/gpt-4o-mini")
    assert priced["totals"]["cost"] > 0 and priced["totals"]["batch_cost"] < priced["totals"]["cost"]
    refused = invoke(app, "run", str(suite), "--judge-model", "openai/gpt-4o-mini", "--max-cost", "0.0000001")
    assert refused.exit_code == 1
    assert refused.stderr.strip().count("\n") == 0 and "more than --max-cost" in refused.stderr
    assert not (isolated_home / "evalyard.db").exists()  # nothing stored
    ran = invoke(app, "run", str(suite), "--judge-model", "openai/gpt-4o-mini", "--max-cost", "0.0000001",
                 "--run-to-cap", "--json")
    assert ran.exit_code == 1 and "cost limit reached" in json.loads(ran.stdout)["error"]  # ran up to the cap
    bad = invoke(app, "run", str(suite), "--run-to-cap")
    assert bad.exit_code == 2 and "--max-cost" in bad.output


def test_plan_of_a_resume_counts_only_the_missing_pairs(app, tmp_path, rules, judge, isolated_home):
    model = rules(RULES)
    data = write(tmp_path / "cases.jsonl", cases(6))
    ran = json.loads(invoke(app, "run", str(data), "-s", judge, "-s", "contains", "--judge-model", model,
                            "--json").stdout)
    db = isolated_home / "evalyard.db"
    with sqlite3.connect(db) as connection:  # as if the run had stopped: two judgements and one match missing
        connection.execute("delete from results where run_id = ? and ((scorer = 'judge' and case_id in "
                           "('q1', 'q4')) or (scorer = 'contains' and case_id = 'q2'))", (ran["run_id"],))
        connection.execute("update runs set status = 'interrupted' where id = ?", (ran["run_id"],))
    before = counts(db)
    alone = plan(app, "--resume", ran["run_id"])
    with_suite = plan(app, str(data), "-s", judge, "-s", "contains", "--judge-model", model,
                      "--resume", ran["run_id"])
    assert counts(db) == before
    for planned in (alone, with_suite):
        line = {entry["name"]: entry for entry in planned["lines"]}
        assert line["judge"]["pairs"] == 2 and line["contains"]["pairs"] == 1
        assert (planned["totals"]["calls"], planned["totals"]["cache_hits"]) == (2, 2)
    resumed = json.loads(invoke(app, "run", "--resume", ran["run_id"], "--json").stdout)
    assert resumed["usage"]["calls"] - ran["usage"]["calls"] == 2


def test_a_streaming_suite_is_planned_without_loading_its_cases(app, tmp_path, rules, judge, monkeypatch):
    from evalyard.suite import Suite

    model = rules(RULES)
    data = write(tmp_path / "many.jsonl", cases(300))
    monkeypatch.setattr(Suite, "cases", property(lambda self: pytest.fail("the plan loaded every case")))
    planned = app.plan(str(data), [judge], judge_model=model)
    report = app.forecast(planned)
    assert report["totals"]["calls"] == 300
