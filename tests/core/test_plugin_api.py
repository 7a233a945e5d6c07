"""The declared plugin API: plugins import only ``evalyard`` (names of ``evalyard.__all__``), every
declared name resolves, and every plugin declares the range of ``evalyard`` versions it works with."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

import evalyard
from testutil import probe

ROOT = Path(__file__).resolve().parents[2]
def plugin_sources():
    yield from sorted(ROOT.glob("plugins/*/evalyard_*/**/*.py"))
    yield from sorted(ROOT.glob("plugin_template/package/*.tmpl"))


def core_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) for each import of the core other than ``from evalyard import <public names>``."""
    found = []
    public = set(evalyard.__all__)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.startswith("evalyard."):
                found.append((node.lineno, f"from {node.module} import ..."))
            elif node.module == "evalyard":
                found.extend((node.lineno, f"evalyard.{a.name} (not public)") for a in node.names
                             if a.name not in public)
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, f"import {a.name}") for a in node.names if a.name.startswith("evalyard."))
    return found


def test_plugins_import_only_the_public_api():
    found = [f"{path.relative_to(ROOT)}:{line}: {what}" for path in plugin_sources()
             for line, what in core_imports(ast.parse(re.sub(r"\{\{(\w+)\}\}", r"\1", path.read_text(encoding="utf-8"))))]
    assert found == [], "plugins import the core only through `from evalyard import ...`:\n" + "\n".join(found)


def test_the_check_sees_private_imports():
    code = ("from evalyard import Scorer, ask\nfrom evalyard.models import Usage\nimport evalyard.runner\n"
            "from evalyard import _secret\n")
    assert [line for line, _ in core_imports(ast.parse(code))] == [2, 3, 4]


def test_every_public_name_resolves_and_importing_evalyard_stays_light():
    output = probe("import sys, evalyard\nheavy = [m for m in ('litellm', 'jinja2', 'click', 'sqlalchemy') if m in sys.modules]\n"
                   "missing = [n for n in evalyard.__all__ if getattr(evalyard, n, None) is None]\n"
                   "print(heavy, missing)")
    assert output == "[] []"


def test_every_plugin_declares_the_evalyard_versions_it_works_with():
    from packaging.requirements import Requirement

    for pyproject in sorted(ROOT.glob("plugins/*/pyproject.toml")):
        dependencies = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
        [core] = [Requirement(d) for d in dependencies if Requirement(d).name == "evalyard"]
        assert core.specifier.contains(evalyard.__version__), pyproject
        assert any(s.operator == "<" for s in core.specifier), f"{pyproject}: no upper bound on evalyard"


def test_case_parsing_is_a_core_library_the_builtin_plugin_only_registers():
    """The public case-parsing names come from ``evalyard.cases``; the built-in loaders plugin
    defines no parsing of its own, and nothing in the core imports case parsing from it."""
    from evalyard.plugin_api import LAZY

    parsing = {name: module for name, (module, _) in LAZY.items()
               if name in {"case_from_record", "check_unique_ids", "read_case_file", "parse_case_json",
                           "load_json_cases", "load_jsonl_cases"}}
    assert set(parsing.values()) == {"cases"} and len(parsing) == 6
    builtin = ast.parse((ROOT / "core" / "evalyard" / "builtins" / "loaders.py").read_text())
    assert [n.name for n in builtin.body if isinstance(n, ast.FunctionDef)] == ["register_loaders"]
    importers = [str(path.relative_to(ROOT)) for path in sorted((ROOT / "core" / "evalyard").rglob("*.py"))
                 if re.search(r"^\s*from\s+\S*builtins\.loaders\s+import", path.read_text(), re.M)]
    assert importers == []


def test_no_plugin_has_an_import_cycle():
    """Inside each plugin package no modules import each other in a circle (Trust-Score's plugin.py
    and scorers.py once did), counting imports inside functions."""
    from testutil import assert_no_import_cycle, import_graph

    packages = sorted(p for p in ROOT.glob("plugins/*/evalyard_*") if p.is_dir() and (p / "__init__.py").exists())
    assert len(packages) >= 8
    for package in packages:
        assert_no_import_cycle(import_graph(package))


def test_the_cycle_check_sees_a_cycle():
    from testutil import assert_no_import_cycle

    with pytest.raises(AssertionError, match="a -> b -> a"):
        assert_no_import_cycle({"a": {"b"}, "b": {"a"}, "c": set()})
