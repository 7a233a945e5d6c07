"""The plugin's prompt templates. The registry names them ``judge/<file stem>`` (the plugin's
namespace); a user's own ``judge/<stem>.jinja`` in a prompts directory overrides one."""

from __future__ import annotations

from pathlib import Path

TEMPLATE_DIR = Path(__file__).parent / "templates"
#: The plugin's namespace (its entry-point name), under which the registry names its templates.
NAMESPACE = "judge"


def template_name(stem: str) -> str:
    """The name the registry gives the plugin's template ``stem`` (for looking it up, not for
    registering it: the plugin registers bare file stems)."""
    return f"{NAMESPACE}/{stem}"


def register_all(register) -> None:
    register(TEMPLATE_DIR)
