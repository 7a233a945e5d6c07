"""`run --batch`: model calls as provider batch jobs through litellm against the fake OpenAI
server's Files + Batches API: batch price, retries of failed and expired requests, the response
cache shared with online calls, and a driver killed while polling that resumes without
submitting any request twice."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

import evalyard
from evalyard.testing.fake_openai import submitted_batches
from testutil import write

MODEL = "openai/gpt-4o-mini"  # priced in litellm's map, batch prices included
JUDGE_PLUGIN = ("from evalyard import hookimpl\n"
                "from evalyard.prompting.scorer import register_prompt_scorer\n"
                "@hookimpl\n"
                "def register_scorers(register):\n"
                "    register_prompt_scorer('judge', template='correctness', register=register)\n")


def cases_file(tmp_path, n):
    return write(tmp_path / "many.jsonl", "".join(json.dumps(
        {"id": f"q{i}", "input": f"question {i}", "candidate": f"answer {i}", "reference": f"answer {i}"}) + "\n"
        for i in range(n)))


def suite_file(tmp_path, n, base_url):
    cases_file(tmp_path, n)
    return write(tmp_path / "suite.yaml", (
        f"name: batched\ndata: many.jsonl\nscorers:\n  - judge\nmodels:\n  {MODEL}:\n"
        f"    api_base: {base_url}\n    api_key_env: FAKE_KEY\n    batch_poll_s: 0.1\n"))


def online_price(usage):
    import litellm

    info = litellm.get_model_info(model=MODEL)
    return usage["prompt_tokens"] * info["input_cost_per_token"] + usage["completion_tokens"] * info[
        "output_cost_per_token"]


@pytest.fixture
def judged(isolated_home, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", "sk-fake")  # the key a suite's api_key_env names: read by the application
    app = evalyard.Application()
    evalyard.register_prompt_scorer("judge", template="correctness", app=app)
    return app


def test_a_batched_run_costs_half_and_its_answers_serve_an_online_rerun(judged, tmp_path, fake_server):
    server = fake_server(batch_delay_s=0.2)
    suite = suite_file(tmp_path, 20, server.base_url)
    run = evalyard.evaluate(str(suite), app=judged, judge_model=MODEL, batch=True)
    stats, usage = run.summary["judge"], run.usage
    assert run.status == "completed" and stats["scored"] == 20 and stats["errors"] == 0
    assert server.stats.requests == 0 and server.stats.batches == 1  # one job, no online call
    assert sorted(server.stats.batch_submissions.values()) == [1] * 20
    assert usage["calls"] == 20 and usage["cost"] == pytest.approx(online_price(usage) / 2, rel=1e-9)
    online = evalyard.evaluate(str(suite), app=judged, judge_model=MODEL)  # same keys: all from the cache
    assert online.usage["cache_hits"] == 20 and server.stats.requests == 0
    assert online.summary["judge"]["mean"] == stats["mean"]


def test_failed_and_expired_requests_are_sent_again_in_later_jobs(judged, tmp_path, fake_server):
    server = fake_server(batch_fail_rate=0.3, seed=5)
    run = evalyard.evaluate(str(suite_file(tmp_path, 30, server.base_url)), app=judged, judge_model=MODEL, batch=True)
    assert run.summary["judge"]["scored"] == 30 and run.summary["judge"]["errors"] == 0
    assert server.stats.batches >= 2 and server.stats.batch_failed > 0
    assert run.usage["retries"] == server.stats.batch_failed  # every failed request was sent again, once
    expiring = fake_server(batch_expire_after=0.5)
    (tmp_path / "again").mkdir()
    run = evalyard.evaluate(str(suite_file(tmp_path / "again", 8, expiring.base_url)), app=judged, judge_model=MODEL,
                            batch=True, use_cache=False)
    assert run.summary["judge"]["scored"] == 8
    assert expiring.stats.batches == 4  # 8 requests, half answered per job: 8, 4, 2, 1
    with sqlite3.connect(judged.settings.data_dir() / "evalyard.db") as con:
        states = dict(con.execute("select state, count(*) from batch_requests group by state").fetchall())
    assert states["failed"] == server.stats.batch_failed + expiring.stats.batch_failed


def test_a_request_that_keeps_failing_is_a_recorded_error_not_a_zero(judged, tmp_path, fake_server):
    server = fake_server(batch_fail_rate=1.0)
    run = evalyard.evaluate(str(suite_file(tmp_path, 3, server.base_url)), app=judged, judge_model=MODEL, batch=True)
    stats = run.summary["judge"]
    assert stats["errors"] == 3 and stats["scored"] == 0 and stats["mean"] is None
    assert all("batch request failed 6 times" in r["error"] for r in run.results)


def _server_process(*args):
    proc = subprocess.Popen([sys.executable, "-m", "evalyard.testing.fake_openai", "--port", "0", *args],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    return proc, line.rsplit(" ", 1)[1].strip()


def test_kill_9_while_polling_then_resume_submits_nothing_twice(tmp_path, cli_env, evalyard_exe, isolated_home):
    server, base_url = _server_process("--batch-delay-s", "4")
    try:
        suite = suite_file(tmp_path, 30, base_url)
        plugin = write(tmp_path / "judge_plugin.py", JUDGE_PLUGIN)
        env = dict(cli_env, EVALYARD_EXTRA_PLUGINS=str(plugin), FAKE_KEY="sk-fake")
        db = isolated_home / "evalyard.db"
        proc = subprocess.Popen([evalyard_exe, "run", str(suite), "--judge-model", MODEL, "--batch"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)

        def submitted():
            try:
                with sqlite3.connect(db) as con:
                    return con.execute("select count(*) from batch_jobs where status='submitted'").fetchone()[0]
            except sqlite3.Error:
                return 0

        deadline = time.monotonic() + 90
        while not submitted() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read().decode()
        os.killpg(proc.pid, signal.SIGKILL)  # the driver dies while it polls the job
        proc.wait()
        with sqlite3.connect(db) as con:
            (run_id,), = con.execute("select id from runs").fetchall()
            assert con.execute("select count(*) from results").fetchone()[0] == 0
        resumed = subprocess.run([evalyard_exe, "run", "--resume", run_id, "--json"], env=env, capture_output=True,
                                 text=True, timeout=120)
        assert resumed.returncode == 0, resumed.stderr
        data = json.loads(resumed.stdout)
        assert data["status"] == "completed" and data["scorers"]["judge"]["scored"] == 30
        assert data["usage"]["cost"] == pytest.approx(online_price(data["usage"]) / 2, rel=1e-9)
        assert "done" in resumed.stderr  # the batch progress line
        batches, ids = submitted_batches(base_url)
        assert batches == 1 and len(ids) == len(set(ids)) == 30  # resumed polling, nothing sent twice
        with sqlite3.connect(db) as con:
            pairs = con.execute("select case_id, scorer from results").fetchall()
            assert len(pairs) == len(set(pairs)) == 30
    finally:
        server.terminate()
        server.wait()
