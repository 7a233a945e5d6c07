"""What plugins registered: scorers, generators, prompt templates and loaders, by name.

Each hook implementation is called with its own ``register`` callback, so every
entry is stamped with the plugin that registered it and a name registered twice
is an error naming both plugins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .errors import PluginError, UnknownNameError
from .scoring import CASE_FIELDS, Generator, Scorer


@dataclass
class Entry:
    name: str
    obj: Any
    plugin: str


@dataclass
class Registry:
    scorers: dict[str, Entry] = field(default_factory=dict)
    generators: dict[str, Entry] = field(default_factory=dict)
    prompt_templates: dict[str, Entry] = field(default_factory=dict)
    loaders: dict[str, Entry] = field(default_factory=dict)

    def scorer(self, name: str) -> type[Scorer]:
        try:
            return self.scorers[name].obj
        except KeyError:
            known = ", ".join(sorted(self.scorers)) or "none installed"
            raise UnknownNameError(f"unknown scorer {name!r} (known: {known})") from None

    def generator(self, name: str) -> type[Generator]:
        try:
            return self.generators[name].obj
        except KeyError:
            known = ", ".join(sorted(self.generators)) or "none installed"
            raise UnknownNameError(f"unknown generator {name!r} (known: {known})") from None


def _add(table: dict[str, Entry], kind: str, name: str, obj: Any, plugin: str) -> None:
    if name in table:
        other = table[name].plugin
        raise PluginError(f"{kind} {name!r} is registered by both plugin {other!r} and plugin {plugin!r}")
    table[name] = Entry(name, obj, plugin)


def _check_scorer(cls: Any, plugin: str) -> str:
    if not (isinstance(cls, type) and issubclass(cls, Scorer)):
        raise PluginError(f"plugin {plugin!r} registered {cls!r} as a scorer; expected a subclass of evalyard.Scorer")
    if not cls.name or not isinstance(cls.name, str):
        raise PluginError(f"plugin {plugin!r}: scorer class {cls.__name__} has no name")
    for required in cls.requires:
        base = required.split(".", 1)[0]
        if base not in CASE_FIELDS:
            raise PluginError(f"plugin {plugin!r}: scorer {cls.name!r} requires unknown case field {required!r}")
    if cls.executor not in ("inline", "process", "async"):
        raise PluginError(f"plugin {plugin!r}: scorer {cls.name!r} has unknown executor {cls.executor!r}")
    return cls.name


def _collect(hook_name: str, make_register: Callable[[str], Callable[..., None]], pm) -> None:
    caller = getattr(pm.hook, hook_name)
    # Call each implementation on its own so `register` knows who is calling.
    for impl in reversed(caller.get_hookimpls()):
        impl.function(register=make_register(impl.plugin_name))


def build(pm) -> Registry:
    reg = Registry()

    def scorer_register(plugin: str):
        def register(cls: Any) -> None:
            _add(reg.scorers, "scorer", _check_scorer(cls, plugin), cls, plugin)

        return register

    def generator_register(plugin: str):
        def register(cls: Any) -> None:
            if not (isinstance(cls, type) and issubclass(cls, Generator) and cls.name):
                raise PluginError(f"plugin {plugin!r} registered {cls!r}; expected a named evalyard.Generator subclass")
            _add(reg.generators, "generator", cls.name, cls, plugin)

        return register

    def template_register(plugin: str):
        def register(name_or_dir: Any, text: str | None = None) -> None:
            if text is None:
                directory = Path(name_or_dir)
                if not directory.is_dir():
                    raise PluginError(f"plugin {plugin!r}: prompt template directory {directory} does not exist")
                for path in sorted(directory.glob("*.j2")) + sorted(directory.glob("*.jinja")):
                    _add(reg.prompt_templates, "prompt template", path.stem, path, plugin)
            else:
                _add(reg.prompt_templates, "prompt template", str(name_or_dir), text, plugin)

        return register

    def loader_register(plugin: str):
        def register(extension: str, function: Callable) -> None:
            if not extension.startswith(".") or not callable(function):
                raise PluginError(f"plugin {plugin!r}: register(extension, function) needs '.ext' and a callable")
            _add(reg.loaders, "loader for", extension.lower(), function, plugin)

        return register

    _collect("register_scorers", scorer_register, pm)
    _collect("register_generators", generator_register, pm)
    _collect("register_prompt_templates", template_register, pm)
    _collect("register_loaders", loader_register, pm)
    return reg


_registry: Registry | None = None


def get_registry() -> Registry:
    global _registry
    if _registry is None:
        from .plugins import get_plugin_manager

        _registry = build(get_plugin_manager())
    return _registry


def invalidate() -> None:
    global _registry
    _registry = None
