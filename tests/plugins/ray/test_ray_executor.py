"""The ``ray`` executor on a real multi-node Ray cluster on this machine (the session's cluster:
see conftest.py).

Drivers are the real ``evalyard`` command in subprocesses (a driver can then be killed), or
the Python API in this process, which connects once for the session. What costs time here is
starting processes (the nodes, each run's actors, a subprocess driver), not scoring: the tests
keep actor builds and subprocess drivers few, and wait for events (results in the database, a
thread's end), never for fixed delays.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install evalyard-ray)")

from ray_helpers import cases_file, nodes_of, plugin_site, results, runs, wait_for  # noqa: E402


def test_the_plugin_loads_without_importing_ray(cli_env):
    """Start-up stays cheap with the plugin installed: `evalyard --help`, `scorers` and `plugins`
    never import Ray (one process runs the three: an import by any of them would stay in it)."""
    cli_env.pop("EVALYARD_LOAD_PLUGINS", None)
    code = ("import sys\nfrom evalyard.console import main\n"
            "for command in (['--help'], ['scorers'], ['plugins']):\n"
            "    sys.argv = ['evalyard', *command]\n"
            "    try:\n        main()\n    except SystemExit:\n        pass\n"
            "    print(command[0], 'RAY-IMPORTED' if 'ray' in sys.modules else 'RAY-NOT-IMPORTED', file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", code], env=cli_env, capture_output=True, text=True, timeout=60)
    assert [line for line in done.stderr.splitlines() if "RAY-" in line] == [
        "--help RAY-NOT-IMPORTED", "scorers RAY-NOT-IMPORTED", "plugins RAY-NOT-IMPORTED"]
    assert "evalyard-ray" in done.stdout  # the plugin was loaded


def test_values_equal_an_inline_run_with_actors_on_both_nodes(tmp_path, ray_cluster, ray_app, isolated_home):
    import evalyard

    data = cases_file(tmp_path / "cases.jsonl", 60, failing=(4, 33))
    scorers = ["node_echo:delay=0.05", "exact_match"]  # two pools: they take the nodes in turn
    inline = evalyard.evaluate(data, scorers, app=ray_app)
    on_ray = evalyard.evaluate(data, scorers, app=ray_app, executor="ray")
    assert on_ray.status == "completed"
    db = isolated_home / "evalyard.db"
    expected = {(c, s): (v, e) for c, s, v, e, _ in results(db, inline.run_id)}
    got = {(c, s): (v, e) for c, s, v, e, _ in results(db, on_ray.run_id)}
    assert got == expected and len(got) == 120
    # scorer exceptions are results, as inline: recorded once per case, never retried elsewhere
    assert got[("c4", "node_echo")][1] == "ValueError: scripted failure on c4"
    echo = [row for row in results(db, on_ray.run_id) if row[1] == "node_echo"]
    assert nodes_of(echo) == {node.node_id for node in ray_cluster.nodes}  # a warm actor on each node


def test_each_actor_sets_its_scorer_up_with_the_runs_runtime(tmp_path, ray_cluster, ray_app, isolated_home):
    """An actor's copy gets ``setup`` with a runtime rebuilt on its node from the run's settings."""
    import evalyard

    run = evalyard.evaluate(cases_file(tmp_path / "cases.jsonl", 20), ["judged_echo"], app=ray_app, executor="ray",
                            judge_model="test-judge")
    assert run.status == "completed" and run.scorers["judged_echo"]["errors"] == 0, run.error
    rows = results(isolated_home / "evalyard.db", run.run_id)
    assert len(rows) == 20 and {json.loads(row[4])["judge"] for row in rows} == {"test-judge"}
    assert nodes_of(rows) <= {node.node_id for node in ray_cluster.nodes} and nodes_of(rows)  # scored on actors


def test_a_node_removed_mid_run_completes_every_case_exactly_once(tmp_path, ray_cluster, ray_app, isolated_home):
    import threading

    import evalyard

    extra = ray_cluster.add_node()
    n = 240
    data = cases_file(tmp_path / "cases.jsonl", n)
    db = isolated_home / "evalyard.db"
    finished = []
    driver = threading.Thread(target=lambda: finished.append(
        evalyard.evaluate(data, ["node_echo:delay=0.02"], app=ray_app, executor="ray")))
    driver.start()
    wait_for(lambda: len(results(db)) >= n // 5 or not driver.is_alive(), what="20% of the results")
    assert driver.is_alive(), "the run finished before a node could be removed: make it slower"
    ray_cluster.remove(extra)
    driver.join(timeout=120)
    run, = finished
    assert run.status == "completed" and run.scorers["node_echo"]["errors"] == 0
    rows = results(db, run.run_id)
    pairs = [(c, s) for c, s, *_ in rows]
    assert len(pairs) == len(set(pairs)) == n and all(e is None for *_, e, _ in rows)
    assert extra.node_id in nodes_of(rows) and len(nodes_of(rows)) == 3  # the removed node scored before it went


def test_run_json_stays_valid_json_when_a_node_dies_mid_run(tmp_path, ray_cluster, driver_env, isolated_home):
    """Issue 43: Ray's "Raylet is terminated" notice used to land on stdout before `run --json`'s
    JSON. A real `evalyard run --json` driver; a node removed while it runs."""
    import json

    extra = ray_cluster.add_node()
    n = 240
    data = cases_file(tmp_path / "cases.jsonl", n)
    db = isolated_home / "evalyard.db"
    exe = str(Path(sys.executable).parent / "evalyard")
    proc = subprocess.Popen([exe, "run", str(data), "-s", "node_echo:delay=0.02", "--executor", "ray", "--json"],
                            env=driver_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: len(results(db)) >= n // 5 or proc.poll() is not None, what="20% of the results")
        assert proc.poll() is None, "the run finished before a node could be removed: make it slower"
        ray_cluster.remove(extra)
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-2000:]
    summary = json.loads(out)  # stdout is the JSON alone, whatever Ray printed
    assert summary["status"] == "completed" and summary["scorers"]["node_echo"]["count"] == n
    assert summary["scorers"]["node_echo"]["errors"] == 0


def test_a_killed_driver_resumes_exactly_once(tmp_path, driver_env, ray_app, isolated_home):
    """A real `evalyard run` process killed with SIGKILL mid-run; another driver (this process, through
    the Python API's resume, the same code as `evalyard run --resume`) finishes it exactly once."""
    import evalyard

    n = 200
    data = cases_file(tmp_path / "cases.jsonl", n)
    db = isolated_home / "evalyard.db"
    exe = str(Path(sys.executable).parent / "evalyard")
    proc = subprocess.Popen([exe, "run", str(data), "-s", "node_echo:delay=0.02", "--executor", "ray"], env=driver_env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    wait_for(lambda: len(results(db)) >= 40 or proc.poll() is not None, what="some results")
    assert proc.poll() is None, "the run finished before it could be killed: make it slower"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    (run_id, status), = runs(db)
    before = {(c, s) for c, s, *_ in results(db, run_id)}
    assert status == "running" and 0 < len(before) < n

    resumed = evalyard.resume(run_id, app=ray_app)
    assert resumed.status == "completed" and resumed.scorers["node_echo"]["errors"] == 0
    pairs = [(c, s) for c, s, *_ in results(db, run_id)]
    assert len(pairs) == len(set(pairs)) == n and before <= set(pairs)


def test_a_node_without_the_plugin_is_refused_before_the_run_is_stored(tmp_path, ray_cluster, ray_app,
                                                                      isolated_home):
    import evalyard

    bare = ray_cluster.add_node(site=None)
    try:
        with pytest.raises(evalyard.InputError) as refused:
            evalyard.evaluate(cases_file(tmp_path / "cases.jsonl", 10), ["node_echo"], app=ray_app, executor="ray")
    finally:
        ray_cluster.remove(bare)
    assert str(refused.value) == (
        f"Ray node {bare.node_ip_address} ({bare.node_id[:8]}): evalyard-raytest is not installed, the driver has "
        "1.0 (scorer 'node_echo'): install the same versions on every node")
    assert runs(isolated_home / "evalyard.db") == []


def test_a_plugin_at_another_version_on_the_nodes_is_refused(tmp_path, ray_app, monkeypatch, isolated_home):
    import evalyard

    monkeypatch.syspath_prepend(str(plugin_site(tmp_path, "2.0")))  # the driver upgraded, the nodes did not
    with pytest.raises(evalyard.InputError, match=r"evalyard-raytest is at 1.0, the driver has 2.0"):
        evalyard.evaluate(cases_file(tmp_path / "cases.jsonl", 5), ["node_echo"], app=ray_app, executor="ray")
    assert runs(isolated_home / "evalyard.db") == []


def test_an_unreachable_cluster_is_refused_in_one_line(tmp_path, driver_env, isolated_home):
    with socket.socket() as free:  # a port nobody listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    driver_env["EVALYARD_RAY_ADDRESS"] = f"127.0.0.1:{port}"
    done = subprocess.run([str(Path(sys.executable).parent / "evalyard"), "run",
                           str(cases_file(tmp_path / "c.jsonl", 3)), "-s", "node_echo", "--executor", "ray"],
                          env=driver_env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"Error: cannot reach the Ray cluster at 127.0.0.1:{port} (EVALYARD_RAY_ADDRESS): Connection refused"]
    assert runs(isolated_home / "evalyard.db") == []


def test_no_worker_for_the_time_limit_fails_the_run_resumably(tmp_path, ray_cluster, ray_app, monkeypatch,
                                                             isolated_home):
    import evalyard
    from evalyard import Application, Settings

    # the time limit is a setting of each application (ray.worker_timeout), read once
    impatient = Application(Settings.from_env(plugin_settings={"ray.worker_timeout": 1.0}))
    failed = evalyard.evaluate(cases_file(tmp_path / "cases.jsonl", 20), ["gpu_echo"], app=impatient, executor="ray")
    assert failed.status == "failed"
    assert failed.error == ("stopped: no Ray worker for scorer 'gpu_echo' for 1 s (1 actor(s) wait for a node with "
                            "cpu=1, gpu=1 free); an infrastructure failure, not a scorer error")
    db = isolated_home / "evalyard.db"
    assert results(db) == []  # never stored as scorer errors

    gpu_node = ray_cluster.add_node(num_gpus=1)
    try:  # ray_app: the default 120 s, as the new node's actor may take a while to start
        resumed = evalyard.resume(failed.run_id, app=ray_app)
    finally:
        ray_cluster.remove(gpu_node)
    assert resumed.status == "completed"
    rows = results(db, failed.run_id)
    assert len(rows) == 20 and nodes_of(rows) == {gpu_node.node_id}


@pytest.mark.postgres
def test_postgresql_one_writer_a_couple_of_connections(tmp_path, ray_app, postgres_server):
    """Workers never touch the database: the driver's connections are all there is, however many actors."""
    import threading

    import evalyard
    import sqlalchemy

    name = f"evalyard_ray_{os.getpid()}"
    url = postgres_server.create_database(name)
    watcher = sqlalchemy.create_engine(url, poolclass=sqlalchemy.pool.NullPool)
    finished, most = [], [0]
    driver = threading.Thread(target=lambda: finished.append(
        evalyard.evaluate(cases_file(tmp_path / "cases.jsonl", 120), ["node_echo:delay=0.02"], app=ray_app,
                          executor="ray", db=url)))
    driver.start()
    with watcher.connect() as con:
        while driver.is_alive():
            count = con.execute(sqlalchemy.text("select count(*) from pg_stat_activity where datname = :d "
                                                "and pid <> pg_backend_pid()"), {"d": name}).scalar()
            con.rollback()  # pg_stat_activity is a snapshot per transaction: take a new one each time
            most[0] = max(most[0], count)
            time.sleep(0.05)
        run, = finished
        pairs = con.execute(sqlalchemy.text("select count(*), count(distinct case_id) from results where run_id = :r"),
                            {"r": run.run_id}).one()
    watcher.dispose()
    assert run.status == "completed" and tuple(pairs) == (120, 120)
    assert 1 <= most[0] <= 2
