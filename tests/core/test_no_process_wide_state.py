"""What keeps plugins on their application, counted in the core and the plugin packages (tests
excluded), each count 0: ``Settings.from_env`` outside the application's own module,
``Settings.variable``, ``add_custom_provider``, a process-wide routing table, an assignment to
a third-party library's module attribute (or to a private name of any module), and an import of
another plugin's submodule."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import evalyard
from evalyard import Settings

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "core" / "evalyard"
#: Where the environment is read into settings: ``Settings.from_env`` itself, and ``Application()``
#: without settings (what the CLI, the Python API and a Ray node's process start with).
FROM_ENV_ALLOWED = {CORE / "settings.py", CORE / "app.py"}
#: Documented module settings of litellm (docs.litellm.ai: "custom_provider_map", "suppress_debug_info",
#: "telemetry"); every other assignment to another library's module attribute is a patch.
DOCUMENTED_SETTINGS = {("litellm", "custom_provider_map"), ("litellm", "suppress_debug_info"),
                       ("litellm", "telemetry")}


def sources():
    for folder in (CORE, *sorted((ROOT / "plugins").glob("*/evalyard_*"))):
        yield from sorted(folder.rglob("*.py"))


def parsed():
    for path in sources():
        yield path, ast.parse(path.read_text(encoding="utf-8"))


def calls_of(tree: ast.AST, attribute: str) -> list[int]:
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == attribute]


def where(path: Path, line: int) -> str:
    return f"{path.relative_to(ROOT)}:{line}"


def test_no_from_env_outside_the_application():
    found = [where(p, line) for p, tree in parsed() if p not in FROM_ENV_ALLOWED for line in calls_of(tree, "from_env")]
    assert found == []


def test_settings_variable_is_gone():
    assert not hasattr(Settings, "variable")
    assert [where(p, line) for p, tree in parsed() for line in calls_of(tree, "variable")] == []


def test_add_custom_provider_is_gone_and_no_plugin_uses_it():
    assert "add_custom_provider" not in evalyard.__all__ and not hasattr(evalyard, "add_custom_provider")
    found = [where(p, n.lineno) for p, tree in parsed() for n in ast.walk(tree)
             if isinstance(n, (ast.Name, ast.Attribute, ast.alias))
             and "add_custom_provider" in (getattr(n, "id", None), getattr(n, "attr", None), getattr(n, "name", None))]
    assert found == []


def module_names(tree: ast.AST) -> dict[str, str]:
    """Local name -> module, for every ``import x`` / ``import x.y as z`` of another library."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top != "evalyard" and not top.startswith("evalyard_"):
                    names[alias.asname or top] = alias.asname and alias.name or top
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            top = node.module.split(".")[0]
            if top != "evalyard" and not top.startswith("evalyard_"):
                for alias in node.names:  # ``from ray._private import worker``: worker is a module
                    names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def patches(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, "module.attribute") for each assignment to an attribute of another library's module."""
    modules = module_names(tree)
    found = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id in modules:
                found.append((node.lineno, f"{target.value.id}.{target.attr}"))
    return found


def patched(tree: ast.AST) -> list[tuple[int, str]]:
    """The patches that count: third-party modules' attributes (save litellm's documented
    settings) and private names of any module (the standard library's public ones, such as a
    sandboxed child's own ``sys.stdout``, are documented to be set)."""
    modules = module_names(tree)
    out = []
    for line, what in patches(tree):
        name, attribute = what.split(".", 1)
        third_party = modules[name].split(".")[0] not in sys.stdlib_module_names
        if (third_party and (name, attribute) not in DOCUMENTED_SETTINGS) or attribute.startswith("_"):
            out.append((line, what))
    return out


def test_no_name_of_another_library_is_patched():
    found = [f"{where(p, line)}: {what}" for p, tree in parsed() for line, what in patched(tree)]
    assert found == []


def test_the_patch_check_sees_patches():
    code = ("import litellm\nfrom ray._private import worker\nimport os\nlitellm._ready = True\n"
            "worker.print_to_stdstream = print\nlitellm.telemetry = False\nx = object()\nx.y = 1\nos.sep += ''\n")
    assert patches(ast.parse(code)) == [(4, "litellm._ready"), (5, "worker.print_to_stdstream"),
                                        (6, "litellm.telemetry"), (9, "os.sep")]
    assert patched(ast.parse(code + "os._exit = print\n")) == [
        (4, "litellm._ready"), (5, "worker.print_to_stdstream"), (10, "os._exit")]


def test_litellm_routing_is_written_in_one_place_and_holds_no_handler():
    """The only write to litellm's process-wide map installs a stateless dispatcher (see
    test_applications_side_by_side for two applications' handlers of one prefix)."""
    writes = [where(p, line) for p, tree in parsed() for line, what in patches(tree)
              if what == "litellm.custom_provider_map"]
    assert writes == [where(CORE / "models" / "providers.py", _line_of("litellm.custom_provider_map = "))]
    from evalyard.models import providers

    tables = [name for name, value in vars(providers).items() if isinstance(value, dict) and not name.startswith("__")]
    assert tables == []


def _line_of(text: str) -> int:
    lines = (CORE / "models" / "providers.py").read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


def other_plugin_imports(path: Path, tree: ast.AST) -> list[str]:
    """Imports of another plugin package's submodules (``evalyard_local.engine``) from ``path``."""
    own = next(part for part in path.relative_to(ROOT).parts if part.startswith("evalyard_"))
    found = []
    for node in ast.walk(tree):
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
        for module in modules:
            top, _, rest = module.partition(".")
            if top.startswith("evalyard_") and top != own and rest:
                found.append(f"{where(path, node.lineno)}: {module}")
    return found


def test_plugins_use_each_other_only_through_top_level_names():
    found = [line for p, tree in parsed() if "plugins" in p.parts for line in other_plugin_imports(p, tree)]
    assert found == []
    code = "import evalyard_local.engine\nfrom evalyard_embedding.models import x\nfrom evalyard_local import y\n"
    here = ROOT / "plugins" / "ray" / "evalyard_ray" / "x.py"
    assert [line.split(": ")[1] for line in other_plugin_imports(here, ast.parse(code))] == [
        "evalyard_local.engine", "evalyard_embedding.models"]
