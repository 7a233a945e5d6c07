"""Render ``plugin_template/`` into a new plugin project (``evalyard plugin new NAME``)."""

from __future__ import annotations

import re
from pathlib import Path

from .errors import EvalyardError

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")


def template_dir() -> Path:
    from importlib.resources import files

    return Path(str(files("evalyard.plugin_template")))


def compatible_range() -> str:
    """The ``evalyard`` versions a plugin written against this one declares: this minor series."""
    from .version import __version__

    major, minor = (int(part) for part in __version__.split(".")[:2])
    return f">={major}.{minor},<{major}.{minor + 1}"


def render_plugin(name: str, destination: Path) -> list[Path]:
    """Write the new project into ``destination``; refuse to overwrite anything."""
    if not NAME_PATTERN.match(name):
        raise EvalyardError(f"plugin name {name!r}: use lowercase letters, digits and underscores, starting with a letter")
    destination = Path(destination)
    if destination.exists() and any(destination.iterdir()):
        raise EvalyardError(f"{destination} already exists and is not empty")
    values = {
        "name": name,
        "package": f"evalyard_{name}",
        "distribution": f"evalyard-{name.replace('_', '-')}",
        "class_name": "".join(part.capitalize() for part in name.split("_")),
        "evalyard_range": compatible_range(),
    }
    written = []
    source = template_dir()
    for template in sorted(source.rglob("*.tmpl")):
        relative = template.relative_to(source).with_suffix("")
        parts = [values["package"] if p == "package" else p for p in relative.parts]
        target = destination.joinpath(*parts)
        text = template.read_text(encoding="utf-8")
        for key, value in values.items():
            text = text.replace("{{" + key + "}}", value)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        written.append(target)
    return written
