"""Model-based scorers and generation in real runs: the CLI and the Python API over the model
layer, with the scripted model (a litellm custom provider) and the fake OpenAI server."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time

import pytest
from click.testing import CliRunner

import evalyard
from evalyard.cli import cli
from testutil import write

CASES = [
    {"id": "paris", "input": "Capital of France?", "candidate": "Paris", "reference": "Paris"},
    {"id": "rome", "input": "Capital of Italy?", "candidate": "Milan", "reference": "Rome"},
    {"id": "oslo", "input": "Capital of Norway?", "candidate": "Oslo", "reference": "Oslo"},
]
# The judge answers by looking at what it was shown (its rules match the rendered prompt).
JUDGE_RULES = [{"contains": "Milan", "content": "Milan is not Rome.\nANSWER: no"},
               {"content": "The response matches the reference.\nANSWER: yes"}]


def invoke(app, *args):
    return CliRunner().invoke(cli, list(args), obj=app, catch_exceptions=False)


@pytest.fixture
def suite(tmp_path):
    return write(tmp_path / "capitals.jsonl", "".join(json.dumps(c) + "\n" for c in CASES))


CUSTOM = """---
description: Is the answer a single word?
fields: [candidate]
answer: binary
scorer:
  name: one_word
---
Is the following answer a single word? Answer yes or no.
{{ candidate }}
"""


def test_a_prompt_scorer_from_one_file_is_listed_and_scores_a_suite(app, tmp_path, suite, rules):
    prompts = tmp_path / "my-prompts"
    write(prompts / "one_word.jinja", CUSTOM)
    listed = json.loads(invoke(app, "scorers", "--json", "--prompts-dir", str(prompts)).output)
    entry = {s["name"]: s for s in listed}["one_word"]
    assert entry["qualified"] == "prompts/one_word" and entry["requires"] == ["candidate"]
    model = rules([{"content": "ANSWER: yes"}])
    result = invoke(app, "run", str(suite), "-s", "one_word", "--prompts-dir", str(prompts), "--judge-model", model,
                    "--json")
    data = json.loads(result.stdout)
    assert result.exit_code == 0, result.output
    assert data["scorers"]["one_word"]["mean"] == 1.0 and data["usage"]["calls"] == 3
    stored = app.open_store().get_run(data["run_id"]).scorers[0]
    assert stored["fingerprint_data"]["model"] == model and len(stored["fingerprint_data"]["template_hash"]) == 64


def test_the_same_through_register_prompt_scorer(app, suite, rules):
    model = rules(JUDGE_RULES)
    judge = evalyard.register_prompt_scorer(
        "matches_reference", template="Does {{ candidate }} say the same as {{ reference }}? Answer yes or no.",
        answer="binary", model=model)
    run = evalyard.evaluate(str(suite), [judge], app=app)
    assert run.summary["matches_reference"]["mean"] == pytest.approx(2 / 3)
    assert run.summary["matches_reference"]["labels"] == {"no": 1, "yes": 2}


def test_a_user_template_overrides_a_built_in_one_and_changes_the_prompt(app, tmp_path, suite, rules):
    model = rules([{"contains": "HOUSE STYLE", "content": "ANSWER: no"}, {"content": "ANSWER: yes"}])
    scorer = evalyard.register_prompt_scorer("uses_correctness", template="correctness", app=app)
    assert scorer.template_name == "correctness"
    built_in = evalyard.evaluate(str(suite), ["uses_correctness"], app=app, judge_model=model)
    assert built_in.summary["uses_correctness"]["mean"] == 1.0
    override = tmp_path / "prompts"
    write(override / "correctness.jinja", "---\nfields: [candidate, reference]\nanswer: binary\n---\n"
                                          "HOUSE STYLE check of {{ candidate }} against {{ reference }}.\n")
    app.use_prompt_dirs([override])
    overridden = evalyard.evaluate(str(suite), ["uses_correctness"], app=app, judge_model=model)
    assert overridden.summary["uses_correctness"]["mean"] == 0.0
    listed = json.loads(invoke(app, "prompts", "list", "--json", "--prompts-dir", str(override)).output)
    assert {t["name"]: t for t in listed}["correctness"]["source"] == str(override / "correctness.jinja")


def test_a_second_run_is_answered_from_the_cache_and_no_cache_calls_again(app, suite, rules):
    model = rules(JUDGE_RULES)
    scorer = evalyard.register_prompt_scorer("judge", template="correctness", app=app)
    first = evalyard.evaluate(str(suite), [scorer], app=app, judge_model=model)
    second = evalyard.evaluate(str(suite), [scorer], app=app, judge_model=model)
    fresh = evalyard.evaluate(str(suite), [scorer], app=app, judge_model=model, use_cache=False)
    assert (first.usage["calls"], first.usage["cache_hits"]) == (3, 0)
    assert (second.usage["calls"], second.usage["cache_hits"]) == (3, 3)
    assert (fresh.usage["calls"], fresh.usage["cache_hits"]) == (3, 0)
    assert first.summary["judge"]["mean"] == second.summary["judge"]["mean"] == fresh.summary["judge"]["mean"]
    text = invoke(app, "cache", "stats", "--json").output
    assert json.loads(text)[0]["model"] == model


def test_a_judge_without_a_model_is_one_line_and_exit_2(app, suite, isolated_home, monkeypatch):
    monkeypatch.delenv("EVALYARD_JUDGE_MODEL", raising=False)
    evalyard.register_prompt_scorer("judge", template="correctness", app=app)
    result = invoke(app, "run", str(suite), "-s", "judge")
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "--judge-model" in lines[0] and "EVALYARD_JUDGE_MODEL" in lines[0]
    assert not (isolated_home / "evalyard.db").exists()


def test_generation_fills_candidates_through_the_model_layer(app, tmp_path, rules):
    path = write(tmp_path / "questions.jsonl", "".join(
        json.dumps({"id": c["id"], "input": c["input"], "reference": c["reference"]}) + "\n" for c in CASES))
    model = rules([{"contains": "France", "content": "Paris"}, {"contains": "Italy", "content": "Rome"},
                   {"contains": "Norway", "content": "Bergen"}])
    result = invoke(app, "run", str(path), "--model", model, "-s", "contains", "--json")
    data = json.loads(result.stdout)
    assert result.exit_code == 0, result.output
    assert data["scorers"]["contains"]["mean"] == pytest.approx(2 / 3)
    assert data["generation"] == {"generated": 3, "errors": 0}
    candidates = app.open_store().candidates(data["run_id"])
    assert candidates["rome"].text == "Rome" and candidates["rome"].details["model"] == model
    again = json.loads(invoke(app, "run", str(path), "--model", model, "-s", "contains", "--json").output)
    assert again["usage"]["cache_hits"] == 3


def test_max_cost_stops_cleanly_and_resume_finishes(app, tmp_path, rules):
    many = write(tmp_path / "many.jsonl", "".join(
        json.dumps({"id": f"q{i}", "input": f"question {i}", "candidate": f"answer {i}", "reference": f"answer {i}"}) + "\n" for i in range(12)))
    model = rules([{"content": "ANSWER: yes", "usage": {"cost": 0.01}}])
    evalyard.register_prompt_scorer("judge", template="correctness", app=app)
    result = invoke(app, "run", str(many), "-s", "judge", "--judge-model", model, "--max-cost", "0.05", "-j", "1",
                    "--json")
    data = json.loads(result.stdout)
    assert result.exit_code == 1 and "cost limit reached" in data["error"]
    done = data["scorers"]["judge"]["count"]
    assert 0 < done < 12 and data["scorers"]["judge"]["errors"] == 0  # stopped, not turned into errors
    store = app.open_store()
    store_settings = store.get_run(data["run_id"]).settings
    assert store_settings["max_cost"] == 0.05 and store_settings["judge_model"] == model
    # the limit holds for the whole run: a resumed run may spend only what is left
    resumed = invoke(app, "run", "--resume", data["run_id"], "--json")
    assert resumed.exit_code == 1 and json.loads(resumed.stdout)["scorers"]["judge"]["count"] == done


@pytest.mark.slow
def test_against_a_faulty_server_every_case_ends_scored_or_recorded(app, tmp_path, fake_server):
    server = fake_server(latency_ms=5, fault_rate=0.3, faults=("429", "500", "malformed"), seed=3)
    many = write(tmp_path / "many.jsonl", "".join(
        json.dumps({"id": f"q{i}", "input": f"question {i}", "candidate": f"answer {i}", "reference": f"answer {i}"}) + "\n" for i in range(40)))
    suite = write(tmp_path / "suite.yaml", (
        f"name: faulty\ndata: {many.name}\nscorers:\n  - name: judge\n"
        f"models:\n  openai/fake-judge:\n    api_base: {server.base_url}\n    api_key_env: FAKE_KEY\n"))
    app = evalyard.Application(evalyard.Settings.from_env({**os.environ, "FAKE_KEY": "sk-fake"}))
    evalyard.register_prompt_scorer("judge", template="correctness", app=app)
    run = evalyard.evaluate(str(suite), app=app, judge_model="openai/fake-judge", concurrency=8)
    stats = run.summary["judge"]
    assert run.status == "completed" and stats["count"] == 40
    assert stats["scored"] + stats["errors"] == 40 and stats["scored"] >= 30
    assert run.usage["retries"] > 0 and server.stats.faults


def test_kill_9_mid_run_then_resume_repeats_no_answered_call(tmp_path, cli_env, evalyard_exe, isolated_home):
    """The judge answers slowly; kill -9 midway; the resumed run calls the model only for the
    cases without a result (answered calls come back from the cache, none is repeated)."""
    calls = tmp_path / "calls.log"
    plugin = write(tmp_path / "counting_judge.py", (
        "from evalyard import hookimpl\n"
        "from evalyard.prompting.scorer import register_prompt_scorer\n"
        "@hookimpl\n"
        "def register_scorers(register):\n"
        "    register_prompt_scorer('judge', template='correctness', register=register)\n"))
    rules = write(tmp_path / "rules.yaml", "- content: \"ANSWER: yes\"\n  delay_ms: 60\n")
    many = write(tmp_path / "many.jsonl", "".join(
        json.dumps({"id": f"q{i}", "input": f"q{i}?", "candidate": f"a{i}", "reference": f"a{i}"}) + "\n" for i in range(40)))
    env = dict(cli_env, EVALYARD_EXTRA_PLUGINS=str(plugin), EVALYARD_SCRIPTED_LOG=str(calls))
    db = isolated_home / "evalyard.db"
    proc = subprocess.Popen([evalyard_exe, "run", str(many), "-s", "judge", "--judge-model", f"scripted/{rules}",
                             "-j", "2"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)

    def results():
        try:
            with sqlite3.connect(db) as con:
                return con.execute("select count(*) from results").fetchone()[0]
        except sqlite3.Error:
            return 0

    deadline = time.monotonic() + 60
    while results() < 8 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, proc.stderr.read().decode()
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    with sqlite3.connect(db) as con:
        (run_id,), = con.execute("select id from runs").fetchall()
        scored_before = {r for (r,) in con.execute("select case_id from results")}
        cached_before = con.execute("select count(*) from model_calls").fetchone()[0]
    assert cached_before >= len(scored_before) > 0
    resumed = subprocess.run([evalyard_exe, "run", "--resume", run_id, "--json"], env=env, capture_output=True,
                             text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    data = json.loads(resumed.stdout)
    assert data["scorers"]["judge"]["count"] == 40 and data["scorers"]["judge"]["errors"] == 0
    with sqlite3.connect(db) as con:
        assert con.execute("select count(*) from model_calls").fetchone()[0] == 40  # one cached answer per case
    # the provider saw each prompt once at most, except calls in flight at the kill
    prompts = [line for line in calls.read_text().splitlines() if line]
    assert len(prompts) - len(set(prompts)) <= 2


def test_a_plugin_may_offer_the_default_judge_and_it_is_said_once(app, suite, rules, monkeypatch, caplog):
    """With no judge model configured, a plugin's default_judge_model answer is used, said once,
    and stored with the run so a resumed run uses the same."""
    import types

    from evalyard import hookimpl

    monkeypatch.delenv("EVALYARD_JUDGE_MODEL", raising=False)
    model = rules(JUDGE_RULES)
    offering = types.ModuleType("offers_a_judge")
    offering.default_judge_model = hookimpl(lambda: model)
    offering.default_judge_model.__name__ = "default_judge_model"
    app.register_plugin(offering, name="offers_a_judge")
    evalyard.register_prompt_scorer("judge", template="correctness", app=app)
    evalyard.register_prompt_scorer("judge_again", template="correctness", app=app)
    with caplog.at_level("WARNING", logger="evalyard"):
        run = evalyard.evaluate(str(suite), ["judge", "judge_again"], app=app)
    assert run.summary["judge"]["mean"] == pytest.approx(2 / 3)
    said = [r.getMessage() for r in caplog.records if "no judge model configured" in r.getMessage()]
    assert len(said) == 1 and model in said[0]
    assert app.open_store().get_run(run.run_id).settings["judge_model"] == model


def test_a_plugins_default_judge_may_come_with_its_own_note(app, suite, rules, monkeypatch, caplog):
    import types

    from evalyard import hookimpl

    monkeypatch.delenv("EVALYARD_JUDGE_MODEL", raising=False)
    model = rules(JUDGE_RULES)
    offering = types.ModuleType("offers_with_a_note")
    offering.default_judge_model = hookimpl(lambda: (model, "judging with the house model; pass --judge-model"))
    offering.default_judge_model.__name__ = "default_judge_model"
    app.register_plugin(offering, name="offers_with_a_note")
    evalyard.register_prompt_scorer("judge", template="correctness", app=app)
    with caplog.at_level("WARNING", logger="evalyard"):
        evalyard.evaluate(str(suite), ["judge"], app=app)
    assert [r.getMessage() for r in caplog.records] == ["evalyard: judging with the house model; pass --judge-model"]
