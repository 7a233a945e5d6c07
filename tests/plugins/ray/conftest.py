"""The Ray tests' cluster: one for the session (a head and one more node, one CPU each, started
with ``ray.cluster_utils.Cluster``), shared by the executor's module and the model actors'
module; tests that remove or add nodes add their own and leave the two alone. Loopback test
clusters run without Ray's token authentication (``RAY_AUTH_MODE=disabled``) and with fast
health checks, so a removed node is declared dead in about a second and a half instead of
fourteen. Ray is imported inside the fixtures: without it, the modules skip with the reason."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from ray_helpers import plugin_site

MB = 1024 * 1024
FAST_HEALTH_CHECKS = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 500,
                      "health_check_timeout_ms": 500, "health_check_failure_threshold": 3}


class LocalCluster:
    def __init__(self, root: Path, models: Path) -> None:
        self.root = root
        self.models = models
        self.site = plugin_site(root, "1.0")
        from ray import cluster_utils

        self.cluster = cluster_utils.Cluster(initialize_head=True, head_node_args=self.node_args(self.site) | {
            "include_dashboard": False, "_system_config": FAST_HEALTH_CHECKS})
        self.nodes = [self.cluster.head_node, self.add_node()]
        self.address = self.cluster.address

    def node_args(self, site: Path | None, models: Path | None = None) -> dict:
        # the nodes find the user's local models (read only), as the driver does, and import the
        # driver's evalyard (a checkout on the driver's PYTHONPATH, not only the installed one)
        path = os.pathsep.join(p for p in (str(site) if site else "", os.environ.get("PYTHONPATH", "")) if p)
        return {"num_cpus": 1, "object_store_memory": 150 * MB,
                "env_vars": {"PYTHONPATH": path,
                             "EVALYARD_MODELS_DIR": str(models or self.models)}}

    def add_node(self, site: Path | None | str = "default", models: Path | None = None, **extra):
        return self.cluster.add_node(**(self.node_args(self.site if site == "default" else site, models) | extra))

    def remove(self, node) -> None:
        self.cluster.remove_node(node, allow_graceful=False)


@pytest.fixture(scope="session")
def ray_cluster(user_models):
    root = Path(tempfile.mkdtemp(prefix="eyray"))  # short: Ray's socket paths live under it
    saved = {k: os.environ.get(k) for k in ("RAY_TMPDIR", "RAY_AUTH_MODE", "RAY_USAGE_STATS_ENABLED")}
    os.environ.update(RAY_TMPDIR=str(root), RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")
    cluster = LocalCluster(root, user_models)
    yield cluster
    import ray

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
    connect and disconnect on their own, as a user's `evalyard run` does.

    Module scope, not session: while connected, Ray prints a removed node's death on this
    process's stdout, whenever the cluster notices it; a connection kept for the session printed
    it into a later module's captured CLI output (a `--json` listing that no longer parsed)."""
    import ray

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


