"""Local model judges served from Ray actors on the cluster's nodes (``EVALYARD_RAY_LOCAL_MODELS=1``).

Only the place where the GGUF runs changes. ``local/...`` calls still go through the core's model
layer on the driver (prompts, response cache, retries, usage, cost) and through evalyard-local's
own provider (request building, answer conversion, errors): the provider is evalyard-local's
``LocalProvider`` given a ``ModelActors`` as its engine. ``ModelActors`` has the engine's shape
(``get(name, locate, settings).submit(request)`` -> a future of llama.cpp's answer) and sends
each request to one of a pool of ``ModelServer`` actors, each holding evalyard-local's ``Engine``
with the model loaded. Judge scorers stay async on the driver's event loop.

A node needs evalyard-local and the model file (``evalyard models install NAME`` there, or
``EVALYARD_MODELS_DIR`` in the node's environment); the driver needs neither the file nor the RAM.
A run's judges check every live node for both before the run is stored (``check``).

Settings (the driver's application, ``RaySettings``): ``ray.model_actors`` (default one per live
node), ``ray.model_cpus`` (CPUs per actor, default 1; llama.cpp gets as many threads), and the
cluster as for the executor (``ray.address``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import threading
from typing import Any, Callable

from evalyard import InputError

from .settings import RaySettings


def node_locate(name: str, for_call: bool = False) -> Any:
    """``local/NAME``'s file as this node sees it: the models directory of the node's own
    environment (each node process is an application of its own), checked. ``for_call``: a
    missing file is the call's bad request (not retried), as evalyard-local's provider says it."""
    from evalyard import Application
    from evalyard_local import ModelFileError, bad_request, locate

    try:
        return locate(name, Application().settings.local_models_dir())
    except ModelFileError as exc:
        if not for_call:
            raise
        raise bad_request(str(exc), name) from None


# -- on the nodes ------------------------------------------------------------------------------
def portable(exc: BaseException) -> tuple[type, tuple, dict]:
    """An exception as (class, args, attributes): litellm's errors cannot be unpickled the usual
    way (their constructors want more than the message), so the driver rebuilds them from this."""
    from ray import cloudpickle

    shipped = (type(exc), exc.args, dict(vars(exc)))
    try:
        cloudpickle.dumps(shipped)
    except Exception:  # an attribute that cannot travel: keep the class name and the message
        return RuntimeError, (f"{type(exc).__name__}: {exc}",), {}
    return shipped


def rebuilt(cls: type, args: tuple, state: dict) -> BaseException:
    exc = cls.__new__(cls)
    exc.args = args
    exc.__dict__.update(state)
    return exc


class ModelServer:
    """The actor: evalyard-local's engine in a process of its own on some node. Async, so one actor
    takes every request sent to it and the engine's queue decides the order, as in process."""

    def __init__(self, cpus: int) -> None:
        from evalyard_local import Engine

        self.engine = Engine()
        self.cpus = cpus

    async def chat(self, name: str, locate: Callable[[], Any], settings: Any,
                   request: dict[str, Any]) -> tuple[str, Any]:
        # The model file is located on this node (the driver's ``locate`` runs here) and llama.cpp
        # gets the actor's CPUs as threads, whatever the driver has.
        try:
            loaded = self.engine.get(name, locate, dataclasses.replace(settings, n_threads=self.cpus))
            return "answer", await asyncio.wrap_future(loaded.submit(request))
        except Exception as exc:
            return "error", portable(exc)

    def where(self) -> dict[str, Any]:
        """Where this actor runs (the pool's sign that it started)."""
        import os

        import ray

        return {"node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid()}

    def report(self) -> dict[str, Any]:
        """Where this actor runs and how many requests its models answered."""
        return {**self.where(), "calls": {name: model.calls for name, model in self.engine.loaded().items()}}

    def close(self) -> None:
        """The pool's goodbye; the models go with the actor's process."""


def model_report(distributions: list[str], name: str) -> dict[str, Any]:
    """A node's side of the pre-run check: installed versions, and whether ``local/NAME``'s file
    is there (located as a model actor on this node would locate it)."""
    from .worker import node_report

    found = node_report(distributions, [])
    try:
        node_locate(name)
        found["model_error"] = None
    except Exception as exc:
        found["model_error"] = str(exc) or type(exc).__name__
    return found


# -- on the driver -------------------------------------------------------------------------------
def unavailable(model: str, message: str) -> Exception:
    """What the model layer gets when no actor could answer: a provider that is down (it retries)."""
    from evalyard import load_litellm

    return load_litellm().ServiceUnavailableError(message=f"local/{model}: {message}", llm_provider="local",
                                                  model=model)


class RemoteModel:
    """What ``ModelActors.get`` returns: a loaded model's ``submit``, served by the actors."""

    def __init__(self, actors: "ModelActors", name: str, locate: Callable[[], Any], settings: Any) -> None:
        self.actors, self.call = actors, (name, locate, settings)

    def submit(self, request: dict[str, Any]) -> concurrent.futures.Future:
        return self.actors.submit((*self.call, request))


class ModelActors:
    """The driver's model actors, in the shape of evalyard-local's ``Engine``: the plugin's one
    ``ActorPool`` (``pool``) of ``ModelServer`` actors, kept loaded between calls.

    Actors start at the first request, one per live node unless ``EVALYARD_RAY_MODEL_ACTORS`` says
    otherwise, spread over the nodes. A request goes to the live actor with the fewest requests in
    flight. A request lost with its actor or node goes to another actor, and a replacement actor
    is started; after as many losses as the pool has actors (or as many actors in a row failed
    to start), the call fails as a provider that is unavailable (the model layer retries it, then
    records the error).

    Requests are awaited on a loop of the pool's own thread: a caller may be the run's event loop
    (``acompletion``) or a plain thread (``completion``), and both get a ``concurrent.futures``
    future, as from the engine in process.
    """

    def __init__(self, settings: RaySettings | None = None) -> None:
        self.settings = settings or RaySettings()
        self._lock = threading.RLock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pool: Any = None
        self._job: Any = None
        self._checked: set[str] = set()

    def get(self, name: str, locate: Callable[[], Any], settings: Any) -> RemoteModel:
        return RemoteModel(self, name, locate, settings)

    def check(self, name: str) -> None:
        """Before a run is stored: every live node has evalyard-local at the driver's version and
        ``local/NAME``'s file. The first problem is refused, naming the node."""
        from .cluster import check_versions, on_every_node
        from .executor import driver_versions

        with self._lock:
            self._connect()
            if name in self._checked:
                return
        expected = driver_versions("evalyard_local")
        for node, found in on_every_node(model_report, list(expected), name, needs="model actors"):
            check_versions(node, found, expected, f"model local/{name}")
            if found["model_error"]:
                raise InputError(f"{node}: {found['model_error']} (on that node: a model actor loads the model "
                                 "from the node's own files)")
        with self._lock:
            self._checked.add(name)

    def size(self) -> int:
        """How many actors the pool keeps."""
        with self._lock:
            return self._start().size

    def _runner(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="evalyard-ray-models", daemon=True).start()
            return self._loop

    # -- the pool ------------------------------------------------------------------------------
    def _connect(self) -> None:
        """Connected to the cluster; after the driver's connection changed, the old actors and
        checks went with the old one."""
        import ray

        from .cluster import connect

        with self._lock:
            if not ray.is_initialized():
                connect(self.settings)
            job = ray.get_runtime_context().get_job_id()
            if job != self._job:
                self._job, self._pool, self._checked = job, None, set()

    def _start(self) -> Any:
        """The pool (made again after the driver's Ray connection changed); its actors start at
        the first request."""
        import ray

        from .cluster import alive_nodes, capacity
        from .pool import ActorPool

        with self._lock:
            self._connect()
            if self._pool is None:
                cpus = self.settings.model_cpus
                if capacity({"cpu": cpus}) < 1:
                    raise InputError(f"no node of the Ray cluster has {cpus} CPU(s) for a model actor "
                                     "(EVALYARD_RAY_MODEL_CPUS)")
                make = ray.remote(ModelServer).options(
                    num_cpus=cpus, max_restarts=0, max_task_retries=0, scheduling_strategy="SPREAD").remote
                size = self.settings.model_actors or len(alive_nodes())
                self._pool = ActorPool("model actors", lambda: make(cpus), size, per_actor=None,
                                       timeout=self.settings.worker_timeout,
                                       resources={"cpu": float(cpus)}, release_when_idle=False,
                                       max_failed_starts=size)
            return self._pool

    # -- requests ------------------------------------------------------------------------------
    def submit(self, call: tuple) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(self._serve(call), self._runner())

    async def _serve(self, call: tuple) -> Any:
        from evalyard import ExecutorUnavailable

        pool = self._start()
        try:
            kind, payload = await pool.call("chat", *call, attempts=max(2, pool.size + 1))
        except ExecutorUnavailable as exc:
            raise unavailable(call[0], str(exc)) from None
        if kind == "error":  # the engine's own error, raised as it would have been in process
            raise rebuilt(*payload)
        return payload

    # -- looking and ending ------------------------------------------------------------------
    def report(self) -> list[dict[str, Any]]:
        """Each live actor's node, process and calls answered per model."""
        import ray

        with self._lock:
            handles = [a.handle for a in self._pool.live] if self._pool is not None else []
        return ray.get([h.report.remote() for h in handles])

    def close(self) -> None:
        """Stop the actors (otherwise they live as long as the driver's Ray connection)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()


def cluster_provider(local: Any, actors: ModelActors) -> Any:
    """evalyard-local's provider ``local`` (the application's: its load settings) with its models
    on the actors, each located on the actor's node; as many requests in flight as all the
    actors' slots together."""
    import functools

    from evalyard_local import LocalProvider

    class ClusterLocalProvider(LocalProvider):
        def capabilities(self, model: str) -> dict[str, Any]:
            found = dict(super().capabilities(model))
            try:
                size = actors.size()
            except Exception:  # no cluster: the call itself will say so; the rest of the answer stands
                size = 1
            found["concurrency"] = int(found.get("concurrency") or 1) * size
            return found

        def check(self, model: str) -> None:
            actors.check(model.removeprefix("local/"))

        def _loaded(self, model: str, settings: Any) -> Any:
            return self.engine.get(model, functools.partial(node_locate, model, True), settings)

    return ClusterLocalProvider(actors, models_dir=local.models_dir, load=local.load)
