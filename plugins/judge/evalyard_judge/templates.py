"""The plugin's prompt templates, registered as ``judge/<file stem>`` (a user's own
``judge/<stem>.jinja`` in a prompts directory overrides one)."""

from __future__ import annotations

from pathlib import Path

TEMPLATE_DIR = Path(__file__).parent / "templates"
PREFIX = "judge/"


def template_name(stem: str) -> str:
    return PREFIX + stem


def register_all(register) -> None:
    # Registered by name and text (not as a directory) so the names carry the `judge/` prefix:
    # bare names would collide with the core's built-ins (`correctness`, `relevance`).
    for path in sorted(TEMPLATE_DIR.glob("*.jinja")):
        register(template_name(path.stem), path.read_text(encoding="utf-8"))
