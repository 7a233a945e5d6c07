"""What lower modules and plugins see of the runtime and of the application, named as protocols.

A scorer's ``setup(runtime)``, a judge and the plugin host need a few members of
``evalyard.runtime.Runtime`` and ``evalyard.app.Application``; naming those members here, low in
the import graph, lets them say what they take without importing the modules that define the
classes (which import them in turn: an import cycle, type-only or not). The classes satisfy the
protocols structurally; nothing here is instantiated.
"""

from __future__ import annotations

from typing import Any, Protocol

from .settings import Settings


class PluginTables(Protocol):
    """What a runtime reads of the application's registry: the tables of the hooks plugins declare."""

    def registered(self, hook_name: str, what: str = "entry") -> dict[str, Any]: ...


class HookApplication(Protocol):
    """The application as hooks, the plugin host and a run's runtime see it (``app``): its
    settings, plugins' typed settings, its model providers and the plugins' own hook tables."""

    settings: Settings

    @property
    def registry(self) -> PluginTables: ...

    @property
    def model_providers(self) -> dict[str, Any]: ...

    def setting(self, key: str) -> Any: ...


class ScorerRuntime(Protocol):
    """A run's runtime as its scorers, generators and judges see it (``setup(runtime)``): the
    judge service, the prompt library, the model layer, plugins' settings and hook tables."""

    @property
    def store(self): ...

    @property
    def judge_model(self) -> str | None: ...

    @property
    def prompts(self): ...

    @property
    def models(self): ...

    def judge(self, template: Any, model: str | None = None, *, scorer: str = "judge", default: Any = None,
              **options: Any): ...

    def check_model(self, model: str) -> None: ...

    def setting(self, key: str) -> Any: ...

    def registered(self, hook_name: str, what: str = "entry") -> dict[str, Any]: ...

    def usage(self) -> dict[str, Any] | None: ...


class RuntimeRecipe(Protocol):
    """What a worker process rebuilds a run's runtime from (``evalyard.app.RuntimeRecipe``, sent
    with each ``ScorerRef``): picklable, and ``build()`` gives the runtime, made once per worker."""

    def build(self) -> ScorerRuntime: ...
