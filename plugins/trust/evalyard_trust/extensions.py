"""Entailment backends and refusal detectors by name: the trust plugin's own and other plugins',
all registered through the trust plugin's hooks (``hookspecs.py``), so the plugin allow/block
lists, tracing and a test's own plugins decide which exist in a run.

Deprecated, still honoured with a ``DeprecationWarning``: the entry-point groups
``evalyard_trust.entailment`` / ``evalyard_trust.refusal`` and the functions
``evalyard_trust.register_entailment_backend`` / ``register_refusal_detector`` (process-wide, so
no allow/block list applies to them). A name given that way wins over a hook's, as it did.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Callable

from evalyard import ConfigError

if TYPE_CHECKING:
    from evalyard import Runtime

#: kind -> (the trust plugin's hook, the deprecated entry-point group)
KINDS = {
    "entailment backend": ("register_entailment_backends", "evalyard_trust.entailment"),
    "refusal detector": ("register_refusal_detectors", "evalyard_trust.refusal"),
}
_ADDED_FROM_PYTHON: dict[str, dict[str, Callable[..., Any]]] = {kind: {} for kind in KINDS}


def add_from_python(kind: str, name: str, factory: Callable[..., Any]) -> None:
    hook = KINDS[kind][0]
    warnings.warn(f"adding a {kind} with evalyard_trust.register_{kind.replace(' ', '_')}() is deprecated: "
                  f"implement the trust plugin's hook {hook}(register) in an evalyard plugin",
                  DeprecationWarning, stacklevel=3)
    _ADDED_FROM_PYTHON[kind][name] = factory


def factories(kind: str, runtime: Runtime) -> dict[str, Callable[..., Any]]:
    """Every factory of this kind the run's plugins register, then the deprecated ways."""
    from importlib.metadata import entry_points

    hook, group = KINDS[kind]
    found = dict(runtime.registered(hook, kind))
    for entry in entry_points(group=group):
        warnings.warn(f"the entry point {entry.name} = {entry.value} in the group {group} is deprecated: "
                      f"implement the trust plugin's hook {hook}(register) in an evalyard plugin instead",
                      DeprecationWarning, stacklevel=2)
        found[entry.name] = entry.load()
    found.update(_ADDED_FROM_PYTHON[kind])
    return found


def make(kind: str, name: str, runtime: Runtime, *args: Any) -> Any:
    """The named backend or detector, built by its factory with ``args``."""
    found = factories(kind, runtime)
    if name not in found:
        raise ConfigError(f"trust: unknown {kind} {name!r} (known: {', '.join(sorted(found))})")
    return found[name](*args)
