"""Finding templates by name: user directories > plugin templates > built-ins.

A template's name is its path under a directory without the ``.jinja`` suffix
(``judge/correctness``); a plugin's templates are ``<plugin namespace>/<bare name>``. The
first source that has a name wins; every template knows its source and which
lower-priority templates of the same name it overrides. A plugin template's former names
(aliases, ``trust_entailment`` for ``trust/entailment``) resolve to it, and a user's file
under a former name still overrides it.
"""

from __future__ import annotations

import re

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..errors import UnknownNameError
from .template import PromptTemplate, parse_template

SUFFIX = ".jinja"


def builtin_dir() -> Path:
    """The built-in templates: ``evalyard/prompts`` in a wheel, the top-level ``prompts/`` in a checkout."""
    try:
        from importlib.resources import files

        packaged = Path(str(files("evalyard.prompts")))
        if packaged.is_dir():
            return packaged
    except (ModuleNotFoundError, TypeError):
        pass
    return Path(__file__).resolve().parents[3] / "prompts"


@dataclass
class _PluginTemplate:
    plugin: str
    text: str
    path: str | None


class PromptLibrary:
    """Templates from user directories (in the order given), plugins, and the built-ins.

    ``user_dirs`` is the caller's list in priority order (``--prompts-dir`` options,
    then ``EVALYARD_PROMPTS``, then the suite's ``prompts:``). Files are parsed when
    first asked for, and a broken file is an ``InputError`` naming it.
    """

    def __init__(self, user_dirs: Iterable[str | Path] = (), *, builtins: Path | None = None,
                 include_builtins: bool = True) -> None:
        self.user_dirs = [Path(d) for d in user_dirs]
        self.builtins = builtins or builtin_dir()
        self.include_builtins = include_builtins
        self._plugin: dict[str, _PluginTemplate] = {}
        self._parsed: dict[tuple[str, str], PromptTemplate] = {}
        self._scanned: list[tuple[str, dict[str, Path]]] | None = None
        self._builtin_entries: dict[str, Path] | None = None

    def add_plugin_template(self, name: str, text: str | None = None, *, path: str | Path | None = None,
                            plugin: str = "python") -> None:
        """A template registered by a plugin (``register_prompt_templates``) or from Python."""
        if text is None:
            if path is None:
                raise ValueError("give the template's text or its path")
            text = Path(path).read_text(encoding="utf-8")
        self._plugin[name] = _PluginTemplate(plugin, text, None if path is None else str(path))

    # -- discovery ----------------------------------------------------------------
    def _sources(self) -> list[tuple[str, dict[str, Path | _PluginTemplate]]]:
        # Directories are scanned once per library (one per run or command): a scorer asks for
        # its template on every case, and walking the directories each time would dominate.
        if self._scanned is None:
            self._scanned = [("file", _scan(directory)) for directory in self.user_dirs]
            self._builtin_entries = _scan(self.builtins) if self.include_builtins else None
        sources = list(self._scanned)
        sources.append(("plugin", dict(self._plugin)))
        if self._builtin_entries is not None:
            sources.append(("built-in", self._builtin_entries))
        return sources

    def names(self) -> list[str]:
        seen: set[str] = set()
        for _, entries in self._sources():
            seen.update(entries)
        return sorted(seen)

    def get(self, name: str) -> PromptTemplate:
        found: list[tuple[str, Path | _PluginTemplate]] = []
        for kind, entries in self._sources():
            if name in entries:
                found.append((kind, entries[name]))
        if not found:
            known = ", ".join(self.names()) or "none"
            raise UnknownNameError(f"no prompt template named {name!r} (known: {known})")
        kind, entry = found[0]
        template = self._load(name, kind, entry)
        template.overrides = [_describe(k, e) for k, e in found[1:]]
        return template

    def list(self) -> list[PromptTemplate]:
        return [self.get(name) for name in self.names()]

    def scorer_templates(self) -> list[PromptTemplate]:
        """Templates that declare themselves scorers (``scorer:`` in the header). Every run asks,
        so only templates whose header has a ``scorer:`` line are parsed (YAML and Jinja2 for
        every template of every plugin cost a cached rerun a fifth of its time)."""
        found = []
        for name in self.names():
            entry = next(entries[name] for _, entries in self._sources() if name in entries)
            text = entry.text if isinstance(entry, _PluginTemplate) else entry.read_text(encoding="utf-8")
            if _SCORER_LINE.search(_header(text)):
                template = self.get(name)
                if template.scorer is not None:
                    found.append(template)
        return found

    def _load(self, name: str, kind: str, entry: Path | _PluginTemplate) -> PromptTemplate:
        if isinstance(entry, _PluginTemplate):
            cache_key = (f"plugin:{entry.plugin}", name)
            text, path, source = entry.text, entry.path, f"plugin {entry.plugin}"
        else:
            cache_key = (str(entry), str(entry.stat().st_mtime_ns))
            text, path, source = entry.read_text(encoding="utf-8"), str(entry), kind
        cached = self._parsed.get(cache_key)
        if cached is None or cached.name != name:
            cached = parse_template(text, name=name, path=path, source=source)
            self._parsed[cache_key] = cached
        return cached


#: a front-matter line that declares a scorer (``scorer: ...`` at the top level of the header)
_SCORER_LINE = re.compile(r"^scorer\s*:", re.MULTILINE)


def _header(text: str) -> str:
    """The front matter of a template's text (between its first two ``---`` lines, as
    ``parse_template`` finds them), or "" when it has none."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return ""
    end = next((n for n in range(1, len(lines)) if lines[n].strip() == "---"), len(lines))
    return "\n".join(lines[1:end])


def _scan(directory: Path) -> dict[str, Path]:
    if not directory.is_dir():
        return {}
    out = {}
    for path in sorted(directory.rglob(f"*{SUFFIX}")):
        name = path.relative_to(directory).as_posix()[: -len(SUFFIX)]
        out[name] = path
    return out


def _describe(kind: str, entry: Path | _PluginTemplate) -> str:
    if isinstance(entry, _PluginTemplate):
        return f"plugin {entry.plugin}"
    return "built-in" if kind == "built-in" else str(entry)
