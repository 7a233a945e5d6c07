"""A scorer as a worker rebuilds it, and the one mapping of what a scorer raises.

Every executor that moves batches out of the run's process (``process``, a plugin's Ray
actors) sends a ``ScorerRef``: the scorer's class by import path (or plugin file) and its
config values, with the recipe of the run's runtime. The worker side is written here once:

- ``build()``: import the class and make the scorer from its config;
- ``setup(runtime)``: the scorer's own ``setup`` with the worker's runtime (rebuilt from the
  run's settings in the worker: ``evalyard.app.RuntimeRecipe``), as the run's process called it
  on its copy;
- ``score(cases)``: an ``Outcome`` (the scores, or a stop), never an exception for what the
  scorer does, so a transport never retries or loses a scorer's own failure;
- ``close()``: the scorer's ``close`` when the worker ends.

``outcome`` is the exception mapping every executor uses, in-process ones included: an
exception from a batch is one recorded failure per case, a ``StopRun`` stops the run (the cases
finished before it are kept), nothing is turned into a 0.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import BatchStopped, InputError, StopRun
from .scoring import Case, Score, Scorer

if TYPE_CHECKING:
    from .protocols import RuntimeRecipe
    from .runtime import Runtime


@dataclass
class Outcome:
    """A batch's result as it travels back from a worker: the scores (None for a case that did
    not finish), and the stop that ended the batch early, if one did."""

    scores: list[Score | None] | None
    stop: StopRun | None = None

    def result(self) -> list[Score]:
        """On the run's side: the scores, or the stop raised (``BatchStopped`` keeps the finished)."""
        if self.stop is None:
            return self.scores  # type: ignore[return-value]
        if self.scores is None:
            raise self.stop
        raise BatchStopped(self.stop, self.scores)


def portable(stop: StopRun) -> StopRun:
    """A stop that survives pickling (a worker sends it back): some take more than a message to
    build (``CostLimitReached``), and would not unpickle; those travel as a plain ``StopRun``."""
    try:
        return pickle.loads(pickle.dumps(stop))
    except Exception:
        return StopRun(str(stop))


def outcome(scorer: Scorer, cases: list[Case]) -> Outcome:
    """Score a batch; map what the scorer raises (the one place executors do)."""
    try:
        return Outcome(scorer.score_batch(cases))
    except BatchStopped as stopped:
        return Outcome(stopped.scores, portable(stopped.stop))
    except StopRun as stop:
        return Outcome(None, portable(stop))
    except Exception as exc:  # the whole batch failed: one recorded failure per case, never a 0
        return Outcome([Score.failure(exc) for _ in cases])


@dataclass
class ScorerRef:
    """A scorer by reference: ``module``/``qualname`` (or the plugin file ``path`` it came from),
    its ``config`` values, and the run's ``runtime`` recipe its ``setup`` gets. Picklable; the
    built scorer stays with the worker that built it."""

    module: str
    qualname: str
    path: str | None
    config: dict[str, Any]
    runtime: RuntimeRecipe | None = None
    scorer: Scorer | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, scorer: Scorer, runtime: RuntimeRecipe | None = None, executor: str = "process") -> "ScorerRef":
        """The reference of a prepared scorer (``InputError`` when no worker could load its class)."""
        module, qualname, path = class_reference(type(scorer), executor)
        return cls(module, qualname, path, scorer.config_dict(), runtime)

    @property
    def key(self) -> tuple:
        """Which built scorer this is: one per (class, config) in a worker."""
        return self.module, self.qualname, self.path, json.dumps(self.config, sort_keys=True, default=str)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "scorer": None}

    def load_class(self) -> type:
        """Import the class by module and name, or from its plugin file when it came from one."""
        import importlib

        if self.path is not None:
            if not os.path.isfile(self.path):
                raise ModuleNotFoundError(f"plugin file {self.path} is not on this machine")
            from .plugins import import_file

            module: Any = import_file(self.path)
        else:
            module = importlib.import_module(self.module)
        for part in self.qualname.split("."):
            module = getattr(module, part)
        return module

    def build(self) -> Scorer:
        cls: Any = self.load_class()
        self.scorer = cls(cls.make_config(self.config))
        return self.scorer

    def setup(self, runtime: Runtime) -> None:
        assert self.scorer is not None, "build() first"
        self.scorer.setup(runtime)

    def start(self) -> Scorer:
        """Build and set up, with the worker's runtime (``WorkerRuntime``: rebuilt at first use)."""
        scorer = self.build()
        self.setup(WorkerRuntime(self.runtime) if self.runtime is not None else None)
        return scorer

    def score(self, cases: list[Case]) -> Outcome:
        assert self.scorer is not None, "build() first"
        return outcome(self.scorer, cases)

    def close(self) -> None:
        if self.scorer is not None:
            scorer, self.scorer = self.scorer, None
            scorer.close()


class WorkerRuntime:
    """The runtime a worker's scorer is set up with: the run's, rebuilt from its recipe when the
    scorer first uses it. A scorer whose ``setup`` takes nothing from it (a sandbox starting its
    worker) costs the worker no plugin loading, and needs no more on its machine than itself."""

    def __init__(self, recipe: Any) -> None:
        self._recipe = recipe
        self._runtime: Any = None

    def __getattr__(self, name: str) -> Any:  # only names the proxy itself has not: the runtime's
        if self._runtime is None:
            self._runtime = self._recipe.build()
        return getattr(self._runtime, name)


def class_reference(cls: type, executor: str = "process") -> tuple[str, str, str | None]:
    """(module, qualified name, plugin file or None): how a worker finds a scorer class."""
    from .plugins import file_module_name

    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__file__", None)
    if "<locals>" in cls.__qualname__ or module is None:
        raise InputError(f"scorer {cls.name!r} uses executor {executor!r}, but its class is defined inside a function "
                         "and cannot be loaded in a worker process: define it at module level")
    if path and cls.__module__ == file_module_name(path):
        return cls.__module__, cls.__qualname__, path
    if getattr(module, "__spec__", None) is None and cls.__module__ != "__main__":
        raise InputError(f"scorer {cls.name!r} uses executor {executor!r}, but its module {cls.__module__!r} cannot "
                         "be imported in a worker process: put it in an importable module or a plugin file")
    return cls.__module__, cls.__qualname__, None


# -- the scorers a worker process keeps warm ---------------------------------------------------
_warm: dict[tuple, ScorerRef] = {}


def warm(ref: ScorerRef) -> ScorerRef:
    """This worker's built and set-up copy of ``ref``'s scorer (built at its first batch)."""
    found = _warm.get(ref.key)
    if found is None:
        ref.start()
        found = _warm[ref.key] = ref
    return found


def close_warm() -> None:
    """Close every scorer this worker built (at the worker's exit); one failing does not stop the rest."""
    while _warm:
        _, ref = _warm.popitem()
        try:
            ref.close()
        except Exception as exc:
            print(f"evalyard: closing scorer {ref.qualname} in worker {os.getpid()} failed: {exc}", file=sys.stderr)
