"""Entry points of one group, read straight from the installed distributions' metadata.

``importlib.metadata`` does the same, but importing it costs ~30 ms (email, zipfile,
csv, pathlib...) before any command can start, and every command loads plugins.
This reads only what plugin discovery needs, with the same rules: distributions
are found as ``*.dist-info`` / ``*.egg-info`` directories on ``sys.path``, in path
order; a distribution found twice (same normalized name) counts once, the first
time; ``entry_points.txt`` is an INI file whose section names are groups.

Where ``sys.path`` holds something this does not read (a zip archive), the whole
lookup goes through ``importlib.metadata`` instead, so discovery never silently
misses a plugin.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from dataclasses import dataclass


#: ``module[:attr.attr][ [extras]]``, as the entry-point specification writes it
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?(\[.*\]\s*)?$")


class _NeedsImportlibMetadata(Exception):
    """The path holds something only importlib.metadata can read (e.g. a zip archive)."""


@dataclass
class EntryPoint:
    name: str
    value: str
    group: str
    dist_name: str | None
    dist_version: str | None

    def load(self) -> object:
        """Import ``module`` or ``module:attr.attr`` (extras in ``[...]`` are ignored, as importlib does)."""
        match = _VALUE.match(self.value)
        if match is None:
            raise ValueError(f"malformed entry point value {self.value!r}")
        obj = importlib.import_module(match["module"])
        for attr in filter(None, (match["attr"] or "").split(".")):
            obj = getattr(obj, attr)
        return obj


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _metadata_headers(dist_dir: str) -> dict[str, str]:
    """Name and Version from METADATA (dist-info) or PKG-INFO (egg-info): the headers only."""
    headers: dict[str, str] = {}
    for filename in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(dist_dir, filename), encoding="utf-8") as handle:
                for line in handle:
                    if not line.strip():
                        break  # the body (long description) follows the first blank line
                    key, sep, value = line.partition(":")
                    if sep and key in ("Name", "Version"):
                        headers.setdefault(key, value.strip())
            return headers
        except OSError:
            continue
    return headers


def _parse_group(text: str, group: str) -> list[tuple[str, str]]:
    entries, in_group = [], False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            in_group = line[1:-1].strip() == group
            continue
        if in_group:
            name, sep, value = line.partition("=")
            if sep:
                entries.append((name.strip(), value.strip()))
    return entries


def _distribution_dirs(path_entry: str) -> list[str]:
    directory = path_entry or "."
    if os.path.isfile(directory):
        raise _NeedsImportlibMetadata(directory)
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [os.path.join(directory, n) for n in names if n.endswith((".dist-info", ".egg-info"))]


def entry_points(group: str, path: list[str] | None = None) -> list[EntryPoint]:
    """The group's entry points over ``path`` (default ``sys.path``), distributions in path order."""
    path = sys.path if path is None else path
    try:
        return _scan(group, path)
    except _NeedsImportlibMetadata:
        return _from_importlib_metadata(group, path)


def _scan(group: str, path: list[str]) -> list[EntryPoint]:
    found: list[EntryPoint] = []
    seen: set[str] = set()
    for entry in path:
        for dist_dir in _distribution_dirs(entry):
            base = os.path.basename(dist_dir).rsplit(".", 1)[0]
            key = _normalize(base.split("-")[0])
            if key in seen:
                continue
            seen.add(key)
            try:
                with open(os.path.join(dist_dir, "entry_points.txt"), encoding="utf-8") as handle:
                    text = handle.read()
            except OSError:
                continue
            entries = _parse_group(text, group)
            if not entries:
                continue
            headers = _metadata_headers(dist_dir)
            for name, value in entries:
                found.append(EntryPoint(name, value, group, headers.get("Name"), headers.get("Version")))
    return found


def _from_importlib_metadata(group: str, path: list[str]) -> list[EntryPoint]:
    from importlib.metadata import distributions

    found: list[EntryPoint] = []
    seen: set[str] = set()
    for dist in distributions(path=path):
        name = dist.metadata["Name"]
        key = _normalize(name or "")
        if key in seen:
            continue
        seen.add(key)
        for ep in dist.entry_points:
            if ep.group == group:
                found.append(EntryPoint(ep.name, ep.value, group, name, dist.version))
    return found
