"""Plugin loading: the core's built-ins and installed plugins go through one pluggy manager.

A ``PluginHost`` belongs to one application (no module-level manager): it registers the
core's built-in plugins, then the installed plugins of the ``evalyard`` entry-point group,
then extra modules or files named in the settings, and checks that every hook
implementation matches a specification. Which plugins load is decided by the
application's ``Settings`` (allow-list, block-list, extras, tracing).
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Iterable

import pluggy

from . import hookspecs
from .errors import PluginError
from .settings import Settings

ENTRY_POINT_GROUP = "evalyard"

#: Parts of the core that are plugins like any other (they use the same hooks).
BUILTIN_PLUGINS = (
    "evalyard.builtins.loaders",
    "evalyard.builtins.scorers",
    "evalyard.builtins.executors",
    "evalyard.builtins.generators",
    "evalyard.testing.scripted",
)

#: The namespace of everything the core registers itself (``evalyard/contains``).
CORE_NAMESPACE = "evalyard"


@dataclass
class PluginInfo:
    """One loaded plugin: its manager name, the namespace of what it registers, and where it came from."""

    name: str
    namespace: str
    version: str | None
    distribution: str | None
    builtin: bool
    hooks: list[str] = field(default_factory=list)


class PluginHost:
    """The plugin manager of one application, with what is known about each plugin."""

    def __init__(self, settings: Settings, plugins: Iterable[tuple[str, object]] = ()) -> None:
        self.settings = settings
        self.pm = pluggy.PluginManager("evalyard")
        self.pm.add_hookspecs(hookspecs)
        self._info: dict[str, PluginInfo] = {}
        for name in settings.block_plugins:
            self.pm.set_blocked(name)
        for module_name in BUILTIN_PLUGINS:
            if module_name not in settings.block_plugins:
                self._add(importlib.import_module(module_name), module_name,
                          PluginInfo(module_name, CORE_NAMESPACE, None, "evalyard", builtin=True))
        if settings.entry_points:
            self._load_entry_points()
        for spec in settings.extra_plugins:
            if spec not in settings.block_plugins and not self.pm.has_plugin(spec):
                namespace = os.path.splitext(os.path.basename(spec))[0] if spec.endswith(".py") else spec
                self._add(_import_extra(spec), spec, PluginInfo(spec, namespace, None, None, builtin=False))
        for name, plugin in plugins:
            self.register(plugin, name)
        self.check()
        if settings.trace_plugins:
            self.pm.trace.root.setwriter(sys.stderr.write)
            self.pm.enable_tracing()

    # -- loading -------------------------------------------------------
    def _load_entry_points(self) -> None:
        from importlib.metadata import entry_points

        allowed, blocked = self.settings.load_plugins, self.settings.block_plugins
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if ep.name in blocked or (allowed is not None and ep.name not in allowed):
                continue
            if self.pm.has_plugin(ep.name):
                continue  # the same distribution found twice on sys.path
            try:
                module = ep.load()
            except Exception as exc:
                raise PluginError(
                    f"plugin {ep.name!r} ({ep.value}) failed to import: {type(exc).__name__}: {exc}") from exc
            dist = ep.dist
            self._add(module, ep.name, PluginInfo(
                ep.name, ep.name, dist.version if dist else None, dist.metadata["Name"] if dist else None,
                builtin=False))

    def _add(self, plugin: object, name: str, info: PluginInfo) -> None:
        try:
            self.pm.register(plugin, name=name)
        except ValueError as exc:  # pluggy: the name or the object is already registered
            raise PluginError(f"cannot register plugin {name!r}: {exc}") from None
        except pluggy.PluginValidationError as exc:
            raise PluginError(f"plugin {name!r} is invalid: {exc}") from None
        self._info[name] = info

    def check(self) -> None:
        """A hook implementation whose name matches no specification is almost always a typo."""
        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            name = self.pm.get_name(exc.plugin) or repr(exc.plugin)
            raise PluginError(f"plugin {name!r} implements an unknown hook: {exc}") from None

    # -- in-process plugins (tests, notebooks) --------------------------
    def register(self, plugin: object, name: str, namespace: str | None = None) -> None:
        self._add(plugin, name, PluginInfo(name, namespace or name, None, None, builtin=False))
        try:
            self.check()
        except PluginError:
            self.unregister(name)
            raise

    def unregister(self, name: str) -> None:
        plugin = self.pm.get_plugin(name)
        if plugin is not None:
            self.pm.unregister(plugin, name=name)
        self._info.pop(name, None)

    # -- what is loaded --------------------------------------------------
    def namespace(self, name: str) -> str:
        info = self._info.get(name)
        return info.namespace if info else name

    def infos(self) -> list[PluginInfo]:
        """Loaded plugins with the hooks each implements, for ``evalyard plugins``."""
        out = []
        for name, plugin in self.pm.list_name_plugin():
            info = self._info.get(name) or PluginInfo(name, name, None, None, builtin=False)
            info.hooks = sorted(caller.name for caller in self.pm.get_hookcallers(plugin) or [])
            out.append(info)
        return sorted(out, key=lambda i: (not i.builtin, i.name))

    def call_per_plugin(self, hook_name: str, **kwargs_for: Any) -> None:
        """Call ``hook_name`` once for each plugin implementing it, through pluggy.

        ``kwargs_for`` maps each argument name to a function of the plugin's name that
        returns that plugin's argument: each implementation gets its own ``register``
        callback, so whatever it registers is stamped with the plugin it came from. Every
        call goes through pluggy's hook caller (tracing, hook-call monitoring and the
        plugin's own wrappers all apply).
        """
        caller = getattr(self.pm.hook, hook_name)
        implementers = {impl.plugin_name for impl in caller.get_hookimpls()}
        everyone = self.pm.list_name_plugin()
        for name, plugin in everyone:
            if name not in implementers:
                continue
            others = [p for n, p in everyone if n != name]
            one = self.pm.subset_hook_caller(hook_name, remove_plugins=others)
            try:
                one(**{arg: make(name) for arg, make in kwargs_for.items()})
            except PluginError:
                raise
            except Exception as exc:  # a broken plugin is named, never a traceback
                raise PluginError(f"plugin {name!r} failed in {hook_name}: {type(exc).__name__}: {exc}") from exc


def _import_extra(spec: str) -> object:
    """Import a plugin given as a dotted module name or a path to a .py file."""
    try:
        if spec.endswith(".py") or os.sep in spec:
            return import_file(spec)
        return importlib.import_module(spec)
    except Exception as exc:
        raise PluginError(f"EVALYARD_EXTRA_PLUGINS: cannot load {spec!r}: {type(exc).__name__}: {exc}") from exc


def file_module_name(path: str) -> str:
    """The module name a plugin file is imported under (the same in worker processes)."""
    return "evalyard_extra_" + os.path.splitext(os.path.basename(path))[0]


def import_file(path: str) -> object:
    """Import a ``.py`` file as a module (once per process), registered in ``sys.modules``."""
    from importlib.util import module_from_spec, spec_from_file_location

    path = os.path.abspath(path)
    module_name = file_module_name(path)
    existing = sys.modules.get(module_name)
    if existing is not None and os.path.abspath(getattr(existing, "__file__", "") or "") == path:
        return existing
    module_spec = spec_from_file_location(module_name, path)
    if module_spec is None or not os.path.isfile(path):
        raise FileNotFoundError(path)
    module = module_from_spec(module_spec)
    sys.modules[module_name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module
