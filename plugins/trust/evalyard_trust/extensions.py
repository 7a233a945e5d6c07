"""Entailment backends and refusal detectors by name: the trust plugin's own and other plugins',
all registered through the trust plugin's hooks (``hookspecs.py``), so the plugin allow/block
lists, tracing and a test's own plugins decide which exist in a run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from evalyard import ConfigError

if TYPE_CHECKING:
    from evalyard import Runtime

#: kind -> the trust plugin's hook that registers it
HOOKS = {
    "entailment backend": "register_entailment_backends",
    "refusal detector": "register_refusal_detectors",
}


def factories(kind: str, runtime: Runtime) -> dict[str, Callable[..., Any]]:
    """Every factory of this kind the run's plugins register."""
    return dict(runtime.registered(HOOKS[kind], kind))


def make(kind: str, name: str, runtime: Runtime, *args: Any) -> Any:
    """The named backend or detector, built by its factory with ``args``."""
    found = factories(kind, runtime)
    if name not in found:
        raise ConfigError(f"trust: unknown {kind} {name!r} (known: {', '.join(sorted(found))})")
    return found[name](*args)
