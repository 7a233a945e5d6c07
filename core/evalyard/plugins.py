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
from typing import TYPE_CHECKING, Any, Callable, Iterable

import pluggy

from . import hookspecs
from .errors import InputError, PluginError
from .settings import Settings

if TYPE_CHECKING:
    from .protocols import HookApplication

ENTRY_POINT_GROUP = "evalyard"

#: Parts of the core that are plugins like any other (they use the same hooks).
BUILTIN_PLUGINS = (
    "evalyard.builtins.loaders",
    "evalyard.builtins.outputs",
    "evalyard.builtins.scorers",
    "evalyard.builtins.executors",
    "evalyard.builtins.reducers",
    "evalyard.builtins.generators",
    "evalyard.builtins.commands",
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
    #: found through the ``evalyard`` entry-point group, so subject to the allow-list
    entry_point: bool = False


class PluginHost:
    """The plugin manager of one application, with what is known about each plugin."""

    def __init__(self, settings: Settings, plugins: Iterable[tuple[str, object]] = (), app: HookApplication | None = None) -> None:
        self.settings = settings
        #: handed to every hook as ``app`` (an implementation may leave the argument out)
        self.app = app
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
            self._add(plugin, name, PluginInfo(name, name, None, None, builtin=False))
        if settings.trace_plugins:
            self.pm.trace.root.setwriter(sys.stderr.write)
            self.pm.enable_tracing()
        # Plugins declare their own hooks before anything is checked; the call is historic, so a
        # plugin registered later (``register``) declares its hooks as it is added.
        try:
            self.pm.hook.register_hookspecs.call_historic(kwargs={"register": self._add_hookspecs, "app": app})
        except PluginError:
            raise
        except Exception as exc:
            raise PluginError(f"a plugin failed in register_hookspecs: {type(exc).__name__}: {exc}") from exc
        self.check()

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
                builtin=False, entry_point=True))

    def _add(self, plugin: object, name: str, info: PluginInfo) -> None:
        if self.pm.has_plugin(name) or self.pm.is_registered(plugin):
            raise PluginError(f"cannot register plugin {name!r}: a plugin of that name (or the same object) "
                              "is registered already")
        try:
            self.pm.register(plugin, name=name)
        except pluggy.PluginValidationError as exc:
            self._drop(plugin, name)
            raise PluginError(f"plugin {name!r} is invalid: {exc}") from None
        except Exception as exc:  # the plugin's register_hookspecs, run as it is added
            self._drop(plugin, name)
            if isinstance(exc, PluginError):
                raise
            raise PluginError(f"plugin {name!r} failed in register_hookspecs: {type(exc).__name__}: {exc}") from exc
        self._info[name] = info

    def _drop(self, plugin: object, name: str) -> None:
        if self.pm.is_registered(plugin):
            self.pm.unregister(plugin, name=name)

    def _add_hookspecs(self, namespace: object) -> None:
        """``register_hookspecs``' callback: a module or class of ``@evalyard.hookspec`` functions."""
        try:
            self.pm.add_hookspecs(namespace)
        except ValueError as exc:  # pluggy: no hook specification marked for evalyard in it
            raise PluginError(f"register_hookspecs: {exc} (mark them with @evalyard.hookspec)") from None

    def collect(self, hook_name: str, what: str,
                check: Callable[[str, Any, str], None] | None = None) -> dict[str, Any]:
        """What plugins register through a hook of the shape ``register(name, obj)``, by name.

        One name belongs to one plugin (a second is an error naming both); ``check(name, obj,
        plugin)`` may refuse an object by raising ``PluginError``. Calls go through pluggy, one
        per implementing plugin (tracing applies)."""
        found: dict[str, tuple[Any, str]] = {}

        def register_for(plugin: str) -> Callable[[str, Any], None]:
            def register(name: str, obj: Any) -> None:
                if not isinstance(name, str) or not name or "/" in name:
                    raise PluginError(f"plugin {plugin!r}: a {what}'s name is a non-empty string without '/'; "
                                      f"got {name!r}")
                if check is not None:
                    check(name, obj, plugin)
                if name in found:
                    raise PluginError(f"plugin {plugin!r} registered {what} {name!r}, which plugin "
                                      f"{found[name][1]!r} registered already")
                found[name] = (obj, plugin)
            return register

        if not hasattr(self.pm.hook, hook_name):
            raise PluginError(f"no loaded plugin declares the hook {hook_name!r}")
        self.call_per_plugin(hook_name, register=register_for)
        return {name: obj for name, (obj, _) in found.items()}

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

    def owner(self, namespace: str, other_than: str) -> str | None:
        """The loaded plugin, other than ``other_than``, whose own namespace ``namespace`` is."""
        return next((name for name, info in self._info.items()
                     if info.namespace == namespace and name != other_than and self.pm.has_plugin(name)), None)

    def loads_namespace(self, plugin: str, namespace: str) -> bool:
        """Whether what ``plugin`` registers under an extra ``namespace`` loads: the block list
        names it like a plugin, and for an installed plugin a set allow-list must name it too (it
        picks installed plugins and their namespaces; in-process and extra plugins pass it)."""
        if namespace in self.settings.block_plugins:
            return False
        allowed, info = self.settings.load_plugins, self._info.get(plugin)
        return allowed is None or info is None or not info.entry_point or namespace in allowed

    def infos(self) -> list[PluginInfo]:
        """Loaded plugins with the hooks each implements, for ``evalyard plugins``."""
        out = []
        for name, plugin in self.pm.list_name_plugin():
            if plugin is None:  # a blocked name (pluggy keeps it to refuse it), not a loaded plugin
                continue
            info = self._info.get(name) or PluginInfo(name, name, None, None, builtin=False)
            info.hooks = sorted(caller.name for caller in self.pm.get_hookcallers(plugin) or [])
            out.append(info)
        return sorted(out, key=lambda i: (not i.builtin, i.name))

    def call_per_plugin(self, hook_name: str, **kwargs_for: Any) -> list[tuple[str, Any]]:
        """Call ``hook_name`` once for each plugin implementing it, through pluggy.

        ``kwargs_for`` maps each argument name to a function of the plugin's name that
        returns that plugin's argument: each implementation gets its own ``register``
        callback, so whatever it registers is stamped with the plugin it came from. Every
        call goes through pluggy's hook caller (tracing, hook-call monitoring and the
        plugin's own wrappers all apply). Returns (plugin, what its implementation returned)
        in the order plugins were loaded (``list_name_plugin``).
        """
        caller = getattr(self.pm.hook, hook_name)
        if "app" in (caller.spec.argnames if caller.spec else ()) and "app" not in kwargs_for:
            kwargs_for = {**kwargs_for, "app": lambda plugin: self.app}
        implementers = {impl.plugin_name for impl in caller.get_hookimpls()}
        everyone = self.pm.list_name_plugin()
        results: list[tuple[str, Any]] = []
        for name, plugin in everyone:
            if name not in implementers:
                continue
            others = [p for n, p in everyone if n != name]
            one = self.pm.subset_hook_caller(hook_name, remove_plugins=others)
            try:
                results.append((name, one(**{arg: make(name) for arg, make in kwargs_for.items()})))
            except (PluginError, InputError):  # bad input (a setting's value) names itself
                raise
            except Exception as exc:  # a broken plugin is named, never a traceback
                raise PluginError(f"plugin {name!r} failed in {hook_name}: {type(exc).__name__}: {exc}") from exc
        return results


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
