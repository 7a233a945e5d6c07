"""Plugin loading: built-ins and entry-point plugins go through the same pluggy manager.

Environment variables control what loads:

- ``EVALYARD_LOAD_PLUGINS``: comma-separated allow-list of entry-point plugin
  names. When set (even to an empty string) only those load; built-ins always load.
- ``EVALYARD_BLOCK_PLUGINS``: comma-separated names never to load (built-ins included).
- ``EVALYARD_EXTRA_PLUGINS``: comma-separated modules (``pkg.module``) or Python
  files (``./my_scorers.py``) to load as plugins without packaging them: a custom
  scorer can be one file.
- ``EVALYARD_TRACE_PLUGINS=1``: print every hook call to stderr.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass, field

import pluggy

from . import hookspecs
from .errors import PluginError

ENTRY_POINT_GROUP = "evalyard"

#: Parts of the core that are plugins like any other (they use the same hooks).
DEFAULT_PLUGINS = (
    "evalyard.builtins.loaders",
    "evalyard.builtins.scorers",
)


@dataclass
class PluginInfo:
    name: str
    version: str | None
    distribution: str | None
    builtin: bool
    hooks: list[str] = field(default_factory=list)


_pm: pluggy.PluginManager | None = None
_info: dict[str, PluginInfo] = {}


def _names_from_env(variable: str) -> set[str] | None:
    raw = os.environ.get(variable)
    if raw is None:
        return None
    return {name.strip() for name in raw.split(",") if name.strip()}


def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager, loading plugins on first use."""
    global _pm
    if _pm is not None:
        return _pm
    pm = pluggy.PluginManager("evalyard")
    pm.add_hookspecs(hookspecs)
    blocked = _names_from_env("EVALYARD_BLOCK_PLUGINS") or set()
    allowed = _names_from_env("EVALYARD_LOAD_PLUGINS")
    for name in blocked:
        pm.set_blocked(name)

    for module_name in DEFAULT_PLUGINS:
        if module_name in blocked:
            continue
        module = importlib.import_module(module_name)
        pm.register(module, name=module_name)
        _info[module_name] = PluginInfo(module_name, None, "evalyard", builtin=True)

    from .entrypoints import entry_points  # not importlib.metadata: see entrypoints.py

    for ep in entry_points(ENTRY_POINT_GROUP):
        if ep.name in blocked or (allowed is not None and ep.name not in allowed):
            continue
        if pm.has_plugin(ep.name):
            continue  # the same distribution installed twice on sys.path
        try:
            module = ep.load()
        except Exception as exc:
            raise PluginError(f"plugin {ep.name!r} ({ep.value}) failed to import: {type(exc).__name__}: {exc}") from exc
        pm.register(module, name=ep.name)
        _info[ep.name] = PluginInfo(ep.name, ep.dist_version, ep.dist_name, builtin=False)

    for spec in sorted(_names_from_env("EVALYARD_EXTRA_PLUGINS") or ()):
        if spec in blocked or pm.has_plugin(spec):
            continue
        pm.register(_import_extra(spec), name=spec)
        _info[spec] = PluginInfo(spec, None, None, builtin=False)

    # A hookimpl whose name matches no hookspec is almost always a typo.
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"plugin {exc.plugin!r} implements an unknown hook: {exc}") from exc

    if os.environ.get("EVALYARD_TRACE_PLUGINS"):
        pm.trace.root.setwriter(sys.stderr.write)
        pm.enable_tracing()
    _pm = pm
    return pm


def _import_extra(spec: str) -> object:
    """Import a plugin given as a dotted module name or a path to a .py file."""
    try:
        if spec.endswith(".py") or os.sep in spec:
            from importlib.util import module_from_spec, spec_from_file_location

            path = os.path.abspath(spec)
            module_name = "evalyard_extra_" + os.path.splitext(os.path.basename(path))[0]
            module_spec = spec_from_file_location(module_name, path)
            if module_spec is None or not os.path.isfile(path):
                raise FileNotFoundError(path)
            module = module_from_spec(module_spec)
            sys.modules[module_name] = module
            module_spec.loader.exec_module(module)
            return module
        return importlib.import_module(spec)
    except Exception as exc:
        raise PluginError(f"EVALYARD_EXTRA_PLUGINS: cannot load {spec!r}: {type(exc).__name__}: {exc}") from exc


def register_plugin(plugin: object, name: str) -> None:
    """Register an in-process plugin (tests, notebooks). Undo with ``unregister_plugin``."""
    pm = get_plugin_manager()
    pm.register(plugin, name=name)
    pm.check_pending()
    _info[name] = PluginInfo(name, None, None, builtin=False)
    from . import registry

    registry.invalidate()


def unregister_plugin(name: str) -> None:
    pm = get_plugin_manager()
    plugin = pm.get_plugin(name)
    if plugin is not None:
        pm.unregister(plugin, name=name)
    _info.pop(name, None)
    from . import registry

    registry.invalidate()


def plugin_infos() -> list[PluginInfo]:
    """Loaded plugins with the hooks each implements, for ``evalyard plugins``."""
    pm = get_plugin_manager()
    out = []
    for name, plugin in pm.list_name_plugin():
        info = _info.get(name) or PluginInfo(name, None, None, builtin=False)
        info.hooks = sorted(impl_caller.name for impl_caller in pm.get_hookcallers(plugin) or [])
        out.append(info)
    return sorted(out, key=lambda i: (not i.builtin, i.name))


def reset() -> None:
    """Forget the loaded plugins; the next call loads them afresh (tests use this)."""
    global _pm
    _pm = None
    _info.clear()
    from . import registry

    registry.invalidate()
