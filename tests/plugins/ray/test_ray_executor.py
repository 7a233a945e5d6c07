"""The ``ray`` executor on a real multi-node Ray cluster on this machine.

One cluster for the module (a head and one more node, one CPU each, started with
``ray.cluster_utils.Cluster``); tests that remove or add nodes add their own and leave the
two alone. Drivers are the real ``evalyard`` command in subprocesses (a driver can then be
killed), or the Python API in this process, which connects once for the module. Loopback test
clusters run without Ray's token authentication (``RAY_AUTH_MODE=disabled``) and with fast health
checks, so a removed node is declared dead in about a second and a half instead of fourteen.

What costs time here is starting processes (the nodes, each run's actors, a subprocess driver),
not scoring: the tests keep actor builds and subprocess drivers few, and wait for events
(results in the database, a thread's end), never for fixed delays.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install evalyard-ray)")
cluster_utils = pytest.importorskip("ray.cluster_utils")

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parents[2] / "examples"
MB = 1024 * 1024
FAST_HEALTH_CHECKS = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 500,
                      "health_check_timeout_ms": 500, "health_check_failure_threshold": 3}


def plugin_site(root: Path, version: str) -> Path:
    """A directory that, on a PYTHONPATH, installs the test plugin ``evalyard-raytest`` at ``version``."""
    site = root / f"site-{version}"
    shutil.copytree(HERE / "evalyard_raytest", site / "evalyard_raytest")
    info = site / f"evalyard_raytest-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: evalyard-raytest\nVersion: {version}\n")
    (info / "entry_points.txt").write_text("[evalyard]\nraytest = evalyard_raytest\n")
    (info / "top_level.txt").write_text("evalyard_raytest\n")
    (info / "RECORD").write_text("")
    return site


class LocalCluster:
    def __init__(self, root: Path, models: Path) -> None:
        self.root = root
        self.models = models
        self.site = plugin_site(root, "1.0")
        self.cluster = cluster_utils.Cluster(initialize_head=True, head_node_args=self.node_args(self.site) | {
            "include_dashboard": False, "_system_config": FAST_HEALTH_CHECKS})
        self.nodes = [self.cluster.head_node, self.add_node()]
        self.address = self.cluster.address

    def node_args(self, site: Path | None) -> dict:
        # the nodes find the user's local models (read only), as the driver does
        return {"num_cpus": 1, "object_store_memory": 150 * MB,
                "env_vars": {"PYTHONPATH": str(site) if site else "", "EVALYARD_MODELS_DIR": str(self.models)}}

    def add_node(self, site: Path | None | str = "default", **extra):
        return self.cluster.add_node(**(self.node_args(self.site if site == "default" else site) | extra))

    def remove(self, node) -> None:
        self.cluster.remove_node(node, allow_graceful=False)


@pytest.fixture(scope="module")
def ray_cluster(user_models):
    root = Path(tempfile.mkdtemp(prefix="eyray"))  # short: Ray's socket paths live under it
    saved = {k: os.environ.get(k) for k in ("RAY_TMPDIR", "RAY_AUTH_MODE", "RAY_USAGE_STATS_ENABLED")}
    os.environ.update(RAY_TMPDIR=str(root), RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")
    cluster = LocalCluster(root, user_models)
    yield cluster
    if ray.is_initialized():
        ray.shutdown()
    cluster.cluster.shutdown()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def driver_env(ray_cluster, cli_env):
    """A subprocess driver's environment: the cluster's address, and the test plugin installed."""
    cli_env["EVALYARD_RAY_ADDRESS"] = ray_cluster.address
    cli_env["PYTHONPATH"] = os.pathsep.join([str(ray_cluster.site), cli_env["PYTHONPATH"]])
    cli_env.pop("EVALYARD_LOAD_PLUGINS", None)
    cli_env.pop("EVALYARD_EXTRA_PLUGINS", None)
    return cli_env


@pytest.fixture(scope="module")
def ray_driver(ray_cluster):
    """This process's connection to the cluster, made once for the module's in-process runs. The
    executor uses a connection it did not make and leaves it open, so each run saves Ray's connect
    and shutdown, and the worker processes a new job starts on every node. The subprocess drivers
    connect and disconnect on their own, as a user's `evalyard run` does."""
    ray.init(address=ray_cluster.address, log_to_driver=False, logging_level=logging.WARNING)
    yield
    ray.shutdown()


@pytest.fixture
def ray_app(ray_cluster, ray_driver, monkeypatch, isolated_home):
    """An in-process driver (the Python API), with the same address and plugin."""
    from evalyard import Application

    monkeypatch.setenv("EVALYARD_RAY_ADDRESS", ray_cluster.address)
    monkeypatch.delenv("EVALYARD_LOAD_PLUGINS", raising=False)
    monkeypatch.syspath_prepend(str(ray_cluster.site))
    return Application()


def cases_file(path: Path, n: int, *, failing: tuple[int, ...] = ()) -> Path:
    with path.open("w") as out:
        for i in range(n):
            metadata = {"value": (i % 7) / 7, **({"raise": True} if i in failing else {})}
            out.write(json.dumps({"id": f"c{i}", "candidate": f"answer {i}", "reference": f"answer {i % 3}",
                                  "metadata": metadata}) + "\n")
    return path


def results(db: Path, run_id: str | None = None) -> list[tuple]:
    if not db.exists():
        return []
    with sqlite3.connect(db) as con:
        try:
            query = "select case_id, scorer, value, error, details from results"
            return con.execute(query + (" where run_id=?" if run_id else ""), (run_id,) if run_id else ()).fetchall()
        except sqlite3.OperationalError:  # tables not made yet
            return []


def runs(db: Path) -> list[tuple]:
    if not db.exists():
        return []
    with sqlite3.connect(db) as con:
        try:
            return con.execute("select id, status from runs").fetchall()
        except sqlite3.OperationalError:
            return []


def nodes_of(rows: list[tuple]) -> set[str]:
    return {json.loads(details)["node"] for *_, error, details in rows if error is None}


def wait_for(predicate, timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


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

    monkeypatch.setenv("EVALYARD_RAY_WORKER_TIMEOUT", "1")
    failed = evalyard.evaluate(cases_file(tmp_path / "cases.jsonl", 20), ["gpu_echo"], app=ray_app, executor="ray")
    assert failed.status == "failed"
    assert failed.error == ("stopped: no Ray worker for scorer 'gpu_echo' for 1 s (1 actor(s) wait for a node with "
                            "cpu=1, gpu=1 free); an infrastructure failure, not a scorer error")
    db = isolated_home / "evalyard.db"
    assert results(db) == []  # never stored as scorer errors

    gpu_node = ray_cluster.add_node(num_gpus=1)
    monkeypatch.setenv("EVALYARD_RAY_WORKER_TIMEOUT", "120")  # the new node's actor may take a while to start
    try:
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


def test_local_model_judge_calls_run_on_model_actors_with_in_process_values(tmp_path, ray_cluster, ray_app, smol_path,
                                                                            monkeypatch, isolated_home):
    """EVALYARD_RAY_LOCAL_MODELS: the same judge run with smollm2-135m answered by model actors on
    both nodes gives the in-process run's values, usage and cost; its cache entries are the same
    ones (a later run is answered from the in-process run's cache without reaching an actor)."""
    import evalyard
    import evalyard_local.plugin
    from evalyard import add_custom_provider
    from evalyard_ray.models import install

    # a model actor has one CPU, so llama.cpp one thread: the in-process run loads it the same way
    monkeypatch.setenv("EVALYARD_LOCAL_THREADS", "1")
    monkeypatch.setenv("EVALYARD_RAY_MODEL_ACTORS", "2")
    claims = [("eiffel", "The Eiffel Tower was completed in 1889.", "The Eiffel Tower was completed in 1889."),
              ("curie", "Marie Curie was born in Warsaw.", "Marie Curie was born in Berlin.")]
    suite = tmp_path / "judged.yaml"  # judged by the example suite's `grounded` template
    suite.write_text(f"name: judged\nprompts: [{EXAMPLES / 'prompts'}]\nscorers: [grounded]\ncases:\n" + "".join(
        f"  - {{id: {i}, context: [{source}], candidate: {claim}}}\n" for i, source, claim in claims))
    judge = "local/smollm2-135m"

    def without_reuse(usage):
        # How much of a prompt a slot still held from its last call (prefix reuse) depends on which
        # calls that slot served before: one slot in process, two actors' slots here.
        return {key: without_reuse(value) if isinstance(value, dict) else value
                for key, value in usage.items() if key != "cached_prompt_tokens"}

    def outcome(run):
        return {(r["case_id"], r["scorer"]): (r["value"], r["label"], r["details"], r["error"],
                                              without_reuse(r["usage"])) for r in run.results}

    in_process = evalyard.evaluate(str(suite), app=ray_app, judge_model=judge)  # its answers go to the cache
    provider = install()  # what loading the plugin does with EVALYARD_RAY_LOCAL_MODELS=1
    try:
        routed = evalyard.evaluate(str(suite), app=ray_app, judge_model=judge, use_cache=False)
        served = provider.engine.report()
        cached = evalyard.evaluate(str(suite), app=ray_app, judge_model=judge)
        served_after = provider.engine.report()
    finally:
        provider.engine.close()
        add_custom_provider("local", evalyard_local.plugin.PROVIDER)
    assert routed.status == "completed" and routed.scorers["grounded"]["errors"] == 0
    assert outcome(routed) == outcome(in_process)
    calls = in_process.usage["calls"]
    assert without_reuse(routed.usage) == without_reuse(in_process.usage) and calls >= len(claims)
    assert routed.usage["cost"] == 0.0 and routed.usage["cache_hits"] == 0
    # the calls ran in the actors' llama.cpp, one actor on each node
    assert {a["node_id"] for a in served} == {node.node_id for node in ray_cluster.nodes}
    assert sum(a["calls"].get("smollm2-135m", 0) for a in served) == calls
    assert all(a["calls"].get("smollm2-135m", 0) >= 1 for a in served)
    # the same cache keys as in process: all hits, no actor reached
    assert cached.usage["cache_hits"] == cached.usage["calls"] == calls
    verdicts = lambda run: {key: value[:2] + value[3:4] for key, value in outcome(run).items()}  # noqa: E731
    assert verdicts(cached) == verdicts(in_process)
    assert [a["calls"] for a in served_after] == [a["calls"] for a in served]
