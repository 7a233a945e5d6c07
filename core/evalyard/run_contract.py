"""What the run service and the application agree on: a checked run not stored yet (``RunPlan``),
what a run gives back (``RunResult``), and the members of the application the services call
(``RunApplication``).

The services (``run_service``, ``experiments``, ``services``) name ``RunApplication`` instead of
importing ``evalyard.app``, which calls them: the application stands above its services, and
they reach it only through what this protocol names. ``Application`` satisfies it structurally.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol

from .settings import Settings
from .suite import Suite

if TYPE_CHECKING:
    from .registry import Registry
    from .results import Results
    from .runtime import Runtime
    from .store import Store


@dataclass
class RunResult:
    """What ``evaluate`` and ``resume`` return: the run's summary, and its results on demand."""

    run_id: str
    name: str
    suite: str
    status: str
    cases: int
    duration_s: float
    #: per scorer: count, errors, mean, std, ci95, pass_rate, labels ... and ``aggregate``
    scorers: dict[str, dict[str, Any]]
    #: set when the run stopped early (``max_errors``)
    error: str | None = None
    generation: dict[str, Any] | None = None
    #: model calls, cache hits, tokens and cost (None: unknown) of the run's model-based scorers
    usage: dict[str, Any] | None = None
    _store: Any = field(default=None, repr=False, compare=False)

    @property
    def summary(self) -> dict[str, dict[str, Any]]:
        return self.scorers

    @property
    def error_share(self) -> float:
        """The share of results that are scorer errors (0 for a run with no results)."""
        count = sum(s["count"] for s in self.scorers.values())
        return sum(s["errors"] for s in self.scorers.values()) / count if count else 0.0

    @property
    def results(self) -> "Results":
        """One dict per (case, scorer): case_id, scorer, value, label, passed, details, error, usage.

        Lazy: a sequence over the database, not a list in memory. Iterating streams the rows,
        ``len`` counts them, ``results[i]`` and ``results[a:b]`` read only those rows, and
        ``results.page(offset, limit)`` reads one page: a run of millions of results is never
        loaded whole unless you ask for ``list(results)``."""
        from .results import Results

        return Results(self._store, self.run_id)

    def to_dict(self) -> dict[str, Any]:
        data = {"run_id": self.run_id, "name": self.name, "suite": self.suite, "status": self.status,
                "cases": self.cases, "duration_s": self.duration_s, "scorers": self.scorers, "error": self.error}
        if self.generation is not None:
            data["generation"] = self.generation
        if self.usage is not None:
            data["usage"] = self.usage
        return data


@dataclass
class RunPlan:
    """A checked run that is not stored yet: the suite, the prepared scorers and generator, and
    the runtime (judge model, prompts, model settings) they were set up with."""

    suite: Suite
    scorers: list
    generator: Any = None
    name: str = ""
    runtime: Runtime | None = None
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def scorer_names(self) -> list[str]:
        return [p.name for p in self.scorers]

    def close(self) -> None:
        """Close what the plan set up (worker processes, models) when it does not run."""
        close_prepared(self.scorers, self.generator)


def close_prepared(prepared: list, generator) -> None:
    """Close what a plan set up (worker processes, models) when the run does not start."""
    for p in prepared:
        p.scorer.close()
    if generator is not None:
        generator.generator.close()


class RunApplication(Protocol):
    """The application as the run service, the experiments and the services see it: its
    settings, registry and stores, and the steps of a run (plan, forecast, execute, resume)."""

    settings: Settings

    @property
    def registry(self) -> "Registry": ...

    def open_store(self, db: str | None = None) -> "Store": ...

    def load_suite(self, source: Any, name: str | None = None, *, format: str | None = None,
                   field_map: dict[str, str] | None = None, qrels: str | None = None) -> tuple[Suite, list[str]]: ...

    def plan(self, suite: Any, scorers: Iterable[Any] | None = None, **options: Any) -> RunPlan: ...

    def forecast(self, plan: RunPlan | None = None, *, db: str | None = None, concurrency: int = 4,
                 resume: str | None = None, executor: str | None = None) -> dict[str, Any]: ...

    def check_resumable_as(self, run_id: str, plan: RunPlan, db: str | None = None) -> None: ...

    def pending_count(self, run_id: str, db: str | None = None) -> int: ...

    def execute(self, plan: RunPlan, *, db: str | None = None, concurrency: int = 4, max_errors: int | None = None,
                on_progress: Callable[[int], None] | None = None,
                on_start: Callable[[str, int], None] | None = None) -> RunResult: ...

    def resume(self, run_id: str, *, db: str | None = None, concurrency: int = 4, max_errors: int | None = None,
               on_progress: Callable[[int], None] | None = None, executor: str | None = None,
               suite: Suite | None = None) -> RunResult: ...

    def evaluate(self, suite: Any, scorers: Iterable[Any] | None = None, **options: Any) -> RunResult: ...

    def stored_result(self, run_id: str, db: str | None = None) -> RunResult: ...
