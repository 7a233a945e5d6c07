"""Reaching the cluster, and checking its nodes before anything of a run is stored.

``EVALYARD_RAY_ADDRESS`` names an existing cluster (``HOST:PORT`` of its head, or ``auto``
on one of its nodes); without it a local Ray instance is started for the run and stopped
after it. A driver that called ``ray.init`` itself keeps its own connection.
"""

from __future__ import annotations

import logging
import os
import platform
import socket
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from evalyard import InputError

from .settings import RaySettings

from .worker import Reference, node_report

ADDRESS_ENV = "EVALYARD_RAY_ADDRESS"
#: Seconds a node may take to answer the pre-run check (it may have to start a worker process).
CHECK_TIMEOUT = 60.0
#: Object store of a local instance: batches of cases and scores are small, and Ray's default
#: (30% of memory) would claim gigabytes of shared memory for nothing.
LOCAL_OBJECT_STORE = 256 * 1024 * 1024


@dataclass
class Connection:
    address: str  # what the driver connected to ("local": an instance started for this run)
    owned: bool  # this executor called ray.init, so it calls ray.shutdown


def connect(settings: RaySettings) -> Connection:
    address = settings.address
    if address and address != "auto" and "://" not in address:
        probe(address)  # before importing Ray: a wrong address is refused at once
    import ray

    # Ray prints the cluster's error messages (a node that died) on the driver's stdout from a
    # thread every driver's ray.init starts (ray/_private/worker.py, listen_error_messages); no
    # public setting sends them elsewhere (log_to_driver and logging_config govern the workers'
    # logs only), and its private printing function is not ours to replace: they stay on stdout.
    if ray.is_initialized():
        return Connection("existing", owned=False)
    quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
    if not address:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        cpus = settings.local_cpus or os.cpu_count() or 1
        # the instance is the run's own and token-protected: Ray's notice that it is would be noise
        logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
        try:
            ray.init(address="local", num_cpus=cpus, object_store_memory=LOCAL_OBJECT_STORE,
                     include_dashboard=False, **quiet)
        except Exception as exc:
            raise InputError(f"could not start a local Ray instance: {first_line(exc)}") from None
        return Connection("local", owned=True)
    try:
        ray.init(address=address, **quiet)
    except Exception as exc:
        raise InputError(f"cannot connect to the Ray cluster at {address} ({ADDRESS_ENV}): {first_line(exc)}") from None
    return Connection(address, owned=True)


def probe(address: str) -> None:
    """Refuse an unreachable head in seconds (Ray itself keeps retrying for a minute)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise InputError(f"{ADDRESS_ENV}={address!r}: expected HOST:PORT of the cluster's head (or 'auto')")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as exc:
        raise InputError(f"cannot reach the Ray cluster at {address} ({ADDRESS_ENV}): "
                         f"{exc.strerror or exc}") from None


def first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")[:400]


def alive_nodes() -> list[dict[str, Any]]:
    import ray

    return [n for n in ray.nodes() if n.get("Alive")]


def node_name(node: dict[str, Any]) -> str:
    return f"Ray node {node.get('NodeManagerAddress', '?')} ({node['NodeID'][:8]})"


def on_every_node(function: Callable[..., Any], *args: Any, needs: str) -> Iterator[tuple[str, Any]]:
    """``function(*args)`` run once on every live node, as (node's name, its answer). A node that
    cannot run it (a module missing, no answer in time) is refused, naming ``needs``; a node that
    died meanwhile is skipped (no actor will be placed there)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    task = ray.remote(num_cpus=0, max_retries=0)(function)
    nodes = alive_nodes()
    pending = {n["NodeID"]: task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False))
               .remote(*args) for n in nodes}
    for node in nodes:
        name = node_name(node)
        try:
            found = ray.get(pending[node["NodeID"]], timeout=CHECK_TIMEOUT)
        except ray.exceptions.GetTimeoutError:
            raise InputError(f"{name} did not answer the pre-run check in {CHECK_TIMEOUT:g} s") from None
        except Exception as exc:
            if node["NodeID"] not in {n["NodeID"] for n in alive_nodes()}:
                continue
            raise InputError(f"{name} cannot run {needs} ({missing_module(exc)}): install the "
                             f"driver's evalyard and evalyard-ray on every node") from None
        yield name, found


def check_versions(name: str, found: dict[str, Any], expected: dict[str, str | None], what: str) -> None:
    """Refuse a node whose Python or distributions differ from the driver's."""
    if tuple(found["python"].split(".")[:2]) != tuple(platform.python_version_tuple()[:2]):
        raise InputError(f"{name} runs Python {found['python']}, the driver {platform.python_version()}: "
                         "use the same Python on every node")
    for dist, want in expected.items():
        have = found["versions"].get(dist)
        if have != want:
            state = "is not installed" if have is None else f"is at {have}"
            raise InputError(f"{name}: {dist} {state}, the driver has {want} ({what}): "
                             "install the same versions on every node")


def check_nodes(reference: Reference, expected: dict[str, str | None], digest: str | None, scorer_name: str) -> None:
    """On every live node: the driver's versions of evalyard, this plugin and the scorer's
    distribution are installed, and the scorer class loads. The first problem is refused."""
    where = reference[2] or reference[1]
    for name, found in on_every_node(node_report, list(expected), [reference], needs="evalyard's scorers"):
        check_versions(name, found, expected, f"scorer {scorer_name!r}")
        loaded = found["classes"][where]
        if loaded["error"]:
            raise InputError(f"{name} cannot load scorer {scorer_name!r} ({reference[0]}.{reference[1]}): "
                             f"{loaded['error']}")
        if digest is not None and loaded["digest"] != digest:
            raise InputError(f"{name}: plugin file {reference[2]} of scorer {scorer_name!r} differs from the "
                             "driver's: copy the same file to every node")


def missing_module(exc: BaseException) -> str:
    """What a node lacks, from the error of a task it could not even unpickle."""
    import re

    text = str(exc)
    match = re.search(r"No module named '([^']+)'", text)
    return f"No module named {match.group(1)!r}" if match else first_line(exc)


def capacity(resources: dict[str, float]) -> int:
    """How many actors needing ``resources`` the live nodes hold at once."""
    total = 0
    for node in alive_nodes():
        have = node.get("Resources") or {}
        fits = [int(have.get("CPU", 0) // resources["cpu"])] if resources.get("cpu") else []
        if resources.get("gpu"):
            fits.append(int(have.get("GPU", 0) // resources["gpu"]))
        if resources.get("memory_mb"):
            fits.append(int(have.get("memory", 0) // (resources["memory_mb"] * 1024 * 1024)))
        total += min(fits) if fits else 1
    return total
