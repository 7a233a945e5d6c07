"""A run killed with SIGKILL midway resumes with every (case, scorer) result exactly once."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time

from testutil import write


def _count(db_path, run_id=None):
    if not db_path.exists():
        return 0
    with sqlite3.connect(db_path) as con:
        try:
            if run_id:
                return con.execute("select count(*) from results where run_id=?", (run_id,)).fetchone()[0]
            return con.execute("select count(*) from results").fetchone()[0]
        except sqlite3.OperationalError:  # tables not created yet
            return 0


def test_sigkill_then_resume(tmp_path, cli_env, evalyard_exe, isolated_home):
    n_cases = 120
    path = write(tmp_path / "slow.jsonl", "".join(
        json.dumps({"id": f"case-{i}", "candidate": "x", "reference": "x" if i % 3 else "y",
                    "metadata": {"script": (i % 10) / 10}}) + "\n" for i in range(n_cases)))
    db = isolated_home / "evalyard.db"
    proc = subprocess.Popen(
        [evalyard_exe, "run", str(path), "-s", "scripted:delay=0.01", "-s", "contains", "-j", "1", "--json"],
        env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while _count(db) < 40 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be killed: make it slower"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    with sqlite3.connect(db) as con:
        (run_id, status), = con.execute("select id, status from runs").fetchall()
        before = dict(((c, s), rid) for rid, c, s in con.execute("select id, case_id, scorer from results"))
    assert status == "running"  # killed: nobody could mark it
    assert 0 < len(before) < 2 * n_cases

    resumed = subprocess.run([evalyard_exe, "run", "--resume", run_id[:8], "--json"], env=cli_env,
                             capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    data = json.loads(resumed.stdout)
    assert data["run_id"] == run_id and data["status"] == "completed"
    assert data["scorers"]["scripted"]["count"] == n_cases and data["scorers"]["contains"]["count"] == n_cases

    with sqlite3.connect(db) as con:
        rows = con.execute("select id, case_id, scorer from results where run_id=?", (run_id,)).fetchall()
    pairs = [(c, s) for _, c, s in rows]
    assert len(pairs) == len(set(pairs)) == 2 * n_cases  # every pair exactly once
    after = {(c, s): rid for rid, c, s in rows}
    assert all(after[pair] == rid for pair, rid in before.items())  # nothing scored before was redone

    again = subprocess.run([evalyard_exe, "run", "--resume", run_id], env=cli_env, capture_output=True, text=True)
    assert again.returncode == 2 and "already completed" in again.stderr


def test_ctrl_c_marks_run_interrupted(tmp_path, cli_env, evalyard_exe, isolated_home):
    path = write(tmp_path / "slow.jsonl", "".join(
        json.dumps({"id": f"c{i}", "candidate": "x", "metadata": {"script": 1}}) + "\n" for i in range(200)))
    # Ctrl-C reaches the run as from a terminal, however pytest was started: a shell starts a
    # background job with SIGINT ignored, and the run would inherit that.
    proc = subprocess.Popen([evalyard_exe, "run", str(path), "-s", "scripted:delay=0.01", "-j", "1"],
                            env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    db = isolated_home / "evalyard.db"
    deadline = time.monotonic() + 60
    while _count(db) < 8 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be stopped: make it slower"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "evalyard run --resume" in err
    with sqlite3.connect(db) as con:
        (run_id, status), = con.execute("select id, status from runs").fetchall()
    assert status == "interrupted"
    done = subprocess.run([evalyard_exe, "run", "--resume", run_id, "--json"], env=cli_env, capture_output=True,
                          text=True, timeout=60)
    assert json.loads(done.stdout)["scorers"]["scripted"]["count"] == 200
    assert _count(db, run_id) == 200


def test_sigterm_marks_run_interrupted_and_exits_143(tmp_path, cli_env, evalyard_exe, isolated_home):
    """What a CI job's timeout or ``docker stop`` sends: handled as Ctrl-C is, with exit code 143."""
    n_cases = 200
    path = write(tmp_path / "slow.jsonl", "".join(
        json.dumps({"id": f"c{i}", "candidate": "x", "metadata": {"script": 1}}) + "\n" for i in range(n_cases)))
    proc = subprocess.Popen([evalyard_exe, "run", str(path), "-s", "scripted:delay=0.01", "-j", "1"],
                            env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    db = isolated_home / "evalyard.db"
    deadline = time.monotonic() + 60
    while _count(db) < 8 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be stopped: make it slower"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    with sqlite3.connect(db) as con:
        (run_id, status), = con.execute("select id, status from runs").fetchall()
    assert status == "interrupted"
    assert f"Resume with: evalyard run --resume {run_id}" in err
    kept = _count(db, run_id)
    assert 8 <= kept < n_cases  # results so far are kept, and the run did not go on to the end

    done = subprocess.run([evalyard_exe, "run", "--resume", run_id, "--json"], env=cli_env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["status"] == "completed" and data["scorers"]["scripted"]["count"] == n_cases
    assert _count(db, run_id) == n_cases
