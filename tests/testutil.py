"""Helpers shared by tests (a module of its own: every folder's conftest is named `conftest`)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent
#: Figures computed by the original packages (see tests/data/reference/README.md).
REFERENCE_DATA = TESTS / "data" / "reference"


def provider_plugin(prefix: str, handler: object) -> object:
    """An in-process plugin that registers ``handler`` as the model provider for ``prefix/``."""
    from evalyard import hookimpl

    class ProviderPlugin:
        @hookimpl
        def register_model_providers(self, register):
            register(prefix, handler)

    return ProviderPlugin()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def import_graph(package_dir: Path, skip: tuple[str, ...] = (), type_only: bool = False) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (at module level or inside functions);
    ``type_only``: those under ``if TYPE_CHECKING:`` too (a type checker reads them)."""
    import ast

    modules = {}
    for path in package_dir.rglob("*.py"):
        if any(part in path.parts for part in skip):
            continue
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        modules[".".join(parts)] = (path, is_package)

    def imports_of(name, path, is_package):
        package = name if is_package else name.rpartition(".")[0]
        found = set()
        tree = ast.parse(path.read_text())
        # Imports under ``if TYPE_CHECKING:`` are read by type checkers only, never run: a parameter
        # typed with a class of a higher layer (``runtime: Runtime``) is no import of that layer.
        typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                       and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
                       for statement in block.body for n in ast.walk(statement)} if not type_only else set()
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module
                submodules = {f"{target}.{a.name}" for a in node.names} & set(modules)
                # `from . import x` names the submodule x; importing a package's __init__ for it is implied
                found |= submodules if submodules and node.module is None else {target} | submodules
        return {m for m in found if m in modules and m != name}

    return {name: imports_of(name, *info) for name, info in modules.items()}


def assert_no_import_cycle(graph: dict[str, set[str]]) -> None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(nxt):] + [nxt]))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)


def import_cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The graph's cycles: each set of modules that import one another, directly or not, with
    more than one module (strongly connected components, Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while not component or node not in component:
                component.add(stack.pop())
            if len(component) > 1:
                cycles.append(component)

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return cycles


def rooms(graph: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """The graph with each subpackage of ``package`` taken as one node (``evalyard.store.trials``
    is ``evalyard.store``), as one reads the package's layers."""
    depth = package.count(".") + 2

    def room(name: str) -> str:
        return ".".join(name.split(".")[:depth])

    out: dict[str, set[str]] = {}
    for name, imported in graph.items():
        out.setdefault(room(name), set()).update(room(m) for m in imported if room(m) != room(name))
    return out


def probe(code: str) -> str:
    """What ``code`` prints in a fresh interpreter (what importing a module does on its own)."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def docs_module(name: str):
    """A module of the documentation's own: ``transcripts`` (docs/transcripts.py, which regenerates
    and checks the pages' transcripts) or ``evalyard_reference`` (docs/_ext, the reference pages'
    generator)."""
    import importlib
    import sys

    folder = ROOT / "docs" / ("_ext" if name == "evalyard_reference" else "")
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    return importlib.import_module(name)


def count_rows(db, table) -> int:
    """Rows of ``table`` in the SQLite file ``db`` (0 before the file or the table exists)."""
    import sqlite3

    if not db.exists():
        return 0
    with sqlite3.connect(db) as con:
        try:
            return con.execute(f"select count(*) from {table}").fetchone()[0]
        except sqlite3.OperationalError:
            return 0


def start_then_kill_9(command, env, ready, what="the run"):
    """Start ``command`` in its own process group, wait (polling, a 60 s deadline) until
    ``ready()`` holds, then kill the group with SIGKILL: an interrupted run as a crash leaves it."""
    import os
    import signal
    import subprocess
    import time

    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 60
    while not ready() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, f"{what} finished before it could be killed: make it slower"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def error_lines(output: str) -> list[str]:
    """The ``Error:`` lines of a command's output, which must be one for bad input, and no
    traceback. Only those: a Ray cluster that an earlier test left up in this pytest worker prints
    its notices (a node marked dead) from its own threads into whatever ``sys.stderr`` is then,
    a CliRunner's capture included."""
    assert "Traceback" not in output, output
    return [line for line in output.splitlines() if line.startswith("Error:")]


def database_at(db_url: str, revision: str) -> list[str]:
    """Bring a new database to an old migration ``revision`` (to test the upgrade that follows);
    returns its table names."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import create_engine, inspect

    import evalyard.store as store_module

    engine = create_engine(db_url)
    try:
        with engine.begin() as connection:
            config = Config()
            config.set_main_option("script_location", str(Path(store_module.__file__).parent.parent / "migrations"))
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
        with engine.connect() as connection:
            return inspect(connection).get_table_names()
    finally:
        engine.dispose()
