"""Plugins' typed settings: declared through the ``register_settings`` hook, read once per
application from its ``Settings`` (explicit ``plugin_settings`` values, else the variable named
in the application's environment snapshot, else the default).

A setting is addressed as ``namespace.name`` (``embedding.cache_mb``); a plugin reads its own as
``app.setting("embedding.cache_mb")`` or ``runtime.setting(...)``, and ``evalyard plugins
--settings`` lists them all. A value that does not parse is bad input naming the variable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from .errors import InputError, PluginError

#: The types a setting may have; ``list`` is an ``os.pathsep``-separated list of strings (as PATH).
TYPES = (str, int, float, bool, Path, list)
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


@dataclass(frozen=True)
class Declared:
    """One declared setting: ``key`` is ``namespace.name``."""

    key: str
    type: type
    default: Any
    env: str | None
    help: str
    plugin: str


def parse(raw: str, kind: type) -> Any:
    """A text value (from the environment) as ``kind``; ValueError says what was expected."""
    text = raw.strip()
    if kind is bool:
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise ValueError("expected 1/true/yes/on or 0/false/no/off")
    if kind is int:
        try:
            return int(text)
        except ValueError:
            raise ValueError("expected a whole number") from None
    if kind is float:
        try:
            return float(text)
        except ValueError:
            raise ValueError("expected a number") from None
    if kind is Path:
        return Path(text).expanduser() if text else None
    if kind is list:
        return [part for part in raw.split(os.pathsep) if part]
    return raw


class PluginSettings:
    """The declared settings of one application and their values, read once."""

    def __init__(self) -> None:
        self.declared: dict[str, Declared] = {}
        self._values: dict[str, Any] = {}

    def declare(self, plugin: str, namespace: str, name: Any, kind: Any, default: Any = None, *,
                env: str | None = None, help: str = "") -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise PluginError(f"plugin {plugin!r}: a setting's name is an identifier (e.g. 'cache_mb'); got {name!r}")
        if kind not in TYPES:
            raise PluginError(f"plugin {plugin!r}: setting {name!r} has type {kind!r}; expected one of "
                              "str, int, float, bool, pathlib.Path, list")
        key = f"{namespace}.{name}"
        if key in self.declared:
            raise PluginError(f"plugin {plugin!r} declared setting {key!r} twice")
        self.declared[key] = Declared(key, kind, default, env, help, plugin)

    def read(self, values: Mapping[str, Any], env: Mapping[str, str]) -> None:
        """Read every declared setting once: an explicit value, else its variable, else the default."""
        unknown = sorted(set(values) - set(self.declared))
        if unknown:
            raise InputError(f"plugin setting {unknown[0]!r} is declared by no loaded plugin "
                             f"(known: {', '.join(sorted(self.declared)) or 'none'})")
        for key, d in self.declared.items():
            if key in values:
                value = values[key]
                if isinstance(value, str) and d.type is not str:
                    value = self._parse(value, d, key)
            elif d.env and d.env in env:
                value = self._parse(env[d.env], d, d.env)
            else:
                value = d.default
            self._values[key] = value

    @staticmethod
    def _parse(raw: str, d: Declared, where: str) -> Any:
        try:
            return parse(raw, d.type)
        except ValueError as exc:
            raise InputError(f"{where}={raw!r}: {exc} (setting {d.key}, {d.type.__name__})") from None

    def get(self, key: str) -> Any:
        if key not in self.declared:
            raise KeyError(f"no loaded plugin declares the setting {key!r}")
        return self._values.get(key, self.declared[key].default)

    def of(self, namespace: str) -> "Namespace":
        """One plugin's settings as attributes: ``settings.of("embedding").cache_mb``."""
        prefix = namespace + "."
        return Namespace({k[len(prefix):]: self.get(k) for k in self.declared if k.startswith(prefix)})

    def __iter__(self) -> Iterator[tuple[Declared, Any]]:
        for key in sorted(self.declared):
            yield self.declared[key], self.get(key)


class Namespace:
    """Read-only attributes over one plugin's setting values."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)

    def __repr__(self) -> str:
        return f"Namespace({self.__dict__!r})"
