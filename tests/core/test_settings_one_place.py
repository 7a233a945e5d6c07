"""Settings come from one place: no module of the core or of a plugin reads the process
environment except ``evalyard/settings.py`` (``Settings.from_env`` and ``Settings.variable``).

Writing the environment stays allowed (switching a library to offline mode before its import, a
sandboxed child's own environment); reading it is what must go through ``Settings``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ROOT / "core" / "evalyard" / "settings.py"
WRITES = {"setdefault", "update", "clear", "pop", "__setitem__"}


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name)
            and node.value.id == "os")


def environment_reads(tree: ast.AST) -> list[int]:
    """Lines that read ``os.environ`` / ``os.getenv`` (``os.environ[...] = x`` and the write methods
    are not reads; ``setdefault`` counts as a write even though it returns the value)."""
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "getenv" and isinstance(node.value, ast.Name) \
                and node.value.id == "os":
            lines.append(node.lineno)
        if not _is_environ(node):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.attr in WRITES:
            continue
        if isinstance(parent, ast.Subscript) and isinstance(parent.ctx, (ast.Store, ast.Del)):
            continue
        lines.append(node.lineno)
    return sorted(lines)


def sources():
    for folder in (ROOT / "core", ROOT / "plugins"):
        for path in sorted(folder.rglob("*.py")):
            if path != SETTINGS and ".venv" not in path.parts:
                yield path


def test_only_settings_reads_the_environment():
    found = [f"{path.relative_to(ROOT)}:{line}" for path in sources()
             for line in environment_reads(ast.parse(path.read_text(encoding="utf-8")))]
    assert found == [], "read the environment through evalyard.Settings: " + ", ".join(found)


def test_the_check_sees_reads_and_lets_writes_through():
    code = ("import os\nos.environ.get('A')\nos.getenv('B')\nx = os.environ['C']\n'D' in os.environ\n"
            "os.environ['E'] = '1'\nos.environ.setdefault('F', '1')\nos.environ.update({})\n")
    assert environment_reads(ast.parse(code)) == [2, 3, 4, 5]
