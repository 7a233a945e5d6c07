"""The layers of issue 43, counted in the core: the store owns every query (SQLAlchemy is
imported outside ``store/`` by the model cache and the batch ledger only, which own their tables,
see their docstrings)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "core" / "evalyard"
#: The model layer's own tables (the response cache and the batch job ledger): why they keep their
#: SQL is written at the top of each module.
OWN_TABLES = {"models/cache.py", "models/batch.py"}


def rel(path: Path) -> str:
    return path.relative_to(CORE).as_posix()


def imported_modules(tree: ast.AST) -> set[str]:
    """Every module an ``import`` names (absolute names only: relative ones are ours)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def sql_importers() -> set[str]:
    return {rel(p) for p in CORE.rglob("*.py")
            if not rel(p).startswith(("store/", "migrations/"))
            and any(m.split(".")[0] in ("sqlalchemy", "sqlmodel") for m in imported_modules(ast.parse(p.read_text())))}


def test_sqlalchemy_is_imported_outside_the_store_by_the_model_tables_only():
    found = sql_importers()
    assert found <= OWN_TABLES and len(found) <= 2, sorted(found)


def test_the_import_check_sees_an_import_in_a_function():
    tree = ast.parse("def f():\n    from sqlalchemy import select\n    import sqlmodel\n")
    assert imported_modules(tree) == {"sqlalchemy", "sqlmodel"}
