"""The ``ray`` executor: a scorer's batches on a pool of warm Ray actors.

``check`` (before the run is stored) connects to the cluster and refuses a scorer that some
node cannot run; ``score_batch`` hands a batch to the scorer's pool and returns its Scores to
the runner, which writes them: the driver stays the only database writer, so nodes need no
database credentials and a batch is written once however often it was moved.

Settings (the driver's application, ``RaySettings``; variables as declared in ``settings.py``):

- ``ray.address`` (``EVALYARD_RAY_ADDRESS``): the cluster (see ``cluster``); unset: a local instance.
- ``ray.actors`` (``EVALYARD_RAY_ACTORS``): actors per (scorer, config); default: as many as the
  live nodes hold (the scorers of a run take the nodes in turn).
- ``ray.worker_timeout`` (``EVALYARD_RAY_WORKER_TIMEOUT``): seconds a scorer may go without any
  live actor before the run stops as ``failed`` (resumable); default 120.
- ``ray.local_cpus`` (``EVALYARD_RAY_LOCAL_CPUS``): CPUs of a local instance; default all.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, packages_distributions, version
from typing import TYPE_CHECKING, Any

from evalyard import InputError, Scorer, ScorerRef

from .cluster import capacity, check_nodes, connect
from .pool import ActorPool, Progress
from .settings import RaySettings
from .worker import ScorerWorker, file_digest

if TYPE_CHECKING:
    from evalyard import Runtime

DEFAULT_TIMEOUT = 120.0


def driver_versions(module: str) -> dict[str, str | None]:
    """The distributions a node must have at the driver's versions: the core, this plugin, and
    the one the scorer's module comes from (none for a module outside any distribution)."""
    names = ["evalyard", "evalyard-ray", *packages_distributions().get(module.partition(".")[0], [])]
    found: dict[str, str | None] = {}
    for name in dict.fromkeys(names):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def actor_resources(scorer: Scorer) -> dict[str, float]:
    wanted = {k: float(v) for k, v in (scorer.resources() or {}).items() if v}
    unknown = set(wanted) - {"cpu", "gpu", "memory_mb"}
    if unknown:
        raise InputError(f"scorer {scorer.name!r} asks for unknown resources {sorted(unknown)} "
                         "(known: cpu, gpu, memory_mb)")
    wanted.setdefault("cpu", 1.0)
    return wanted


class RayExecutor:
    def __init__(self, concurrency: int, settings: RaySettings | None = None) -> None:
        self.concurrency = concurrency
        self.settings = settings or RaySettings()
        self.recipe = None
        self.connection = None
        self.timeout = DEFAULT_TIMEOUT
        self.actors_per_pool: int | None = None
        self._checked: dict[tuple, dict[str, str | None]] = {}
        self._pools: dict[tuple, ActorPool] = {}
        self._actor_class: Any = None
        self._progress = Progress()

    def bind(self, budget: Any, runtime: Runtime) -> None:
        """The run's runtime: each actor's scorer is set up with one rebuilt from its recipe."""
        self.recipe = getattr(runtime, "recipe", None)

    # -- before the run ------------------------------------------------------------
    def check(self, scorer: Scorer) -> None:
        self.timeout = self.settings.worker_timeout
        self.actors_per_pool = self.settings.actors
        ref = ScorerRef.of(scorer, executor="ray")
        reference = (ref.module, ref.qualname, ref.path)
        actor_resources(scorer)
        if self.connection is None:
            self.connection = connect(self.settings)
        if reference not in self._checked:
            expected = driver_versions(reference[0])
            digest = file_digest(reference[2]) if reference[2] else None
            try:
                check_nodes(reference, expected, digest, scorer.name)
            except InputError:  # the run is refused: the runner will not close this executor
                self.close()
                raise
            self._checked[reference] = expected

    # -- the run ---------------------------------------------------------------------
    async def score_batch(self, scorer: Scorer, cases: list) -> list:
        ref = ScorerRef.of(scorer, self.recipe, "ray")
        pool = self._pools.get(ref.key)
        if pool is None:
            pool = self._pools[ref.key] = self._new_pool(scorer, ref)
        return await pool.score(cases)

    def _new_pool(self, scorer: Scorer, ref: ScorerRef) -> ActorPool:
        import ray

        if self._actor_class is None:
            self._actor_class = ray.remote(ScorerWorker)
        resources = actor_resources(scorer)
        options: dict[str, Any] = {
            "num_cpus": resources["cpu"], "num_gpus": resources.get("gpu", 0),
            "max_restarts": 0, "max_task_retries": 0, "scheduling_strategy": "SPREAD",
        }
        if resources.get("memory_mb"):
            options["memory"] = int(resources["memory_mb"] * 1024 * 1024)
        expected = self._checked[(ref.module, ref.qualname, ref.path)]
        actor = self._actor_class.options(**options)
        # Every pool may fill the cluster: the runner hands all scorers' batches over at once, Ray
        # places actors in the order asked, and a pool with no batch left releases its actors, so
        # the scorers take the nodes in turn, each with all of them.
        size = self.actors_per_pool or max(1, capacity(resources))
        return ActorPool(f"scorer {scorer.name!r}", lambda: actor.remote(ref, expected), size,
                         timeout=self.timeout, progress=self._progress, resources=resources)

    def close(self) -> None:
        import ray

        for pool in self._pools.values():
            pool.close()
        self._pools.clear()
        if self.connection is not None and self.connection.owned and ray.is_initialized():
            ray.shutdown()
        self.connection = None
