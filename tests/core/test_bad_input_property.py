"""Bad input, closed as a class: arbitrary bytes and arbitrary structures given to every loader
and to ``evalyard run`` either load, or fail with one line that names the file (and the line
and field where there is one), exit code 2, and nothing stored."""

from __future__ import annotations

import csv
import io
import json
import re

import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalyard import Application, Case, InputError
from evalyard.cli import cli

FORMATS = (".jsonl", ".json", ".csv", ".yaml")
FIELDS = ["id", "input", "candidate", "reference", "context", "metadata", "extra"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                      max_leaves=8)
records = st.dictionaries(st.sampled_from(FIELDS), values, max_size=6)
documents = st.one_of(values, st.lists(records, max_size=4))

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def serialise(extension: str, doc) -> bytes:
    """A document written in a format's own syntax (CSV: its records' keys as the header)."""
    if extension == ".jsonl":
        items = doc if isinstance(doc, list) else [doc]
        return "".join(json.dumps(item) + "\n" for item in items).encode()
    if extension == ".json":
        return json.dumps(doc).encode()
    if extension == ".yaml":
        suite = {"name": "s", "cases": doc, "scorers": ["json_valid"]} if isinstance(doc, list) else doc
        return yaml.safe_dump(suite, allow_unicode=True).encode()
    rows = doc if isinstance(doc, list) else [{"candidate": doc}]
    header = sorted({key for row in rows if isinstance(row, dict) for key in row}) or ["candidate"]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    for row in rows:
        cells = row if isinstance(row, dict) else {}
        writer.writerow(["" if cells.get(h) is None else json.dumps(cells[h]) if not isinstance(cells[h], str)
                         else cells[h] for h in header])
    return out.getvalue().encode()


def check_loader(app: Application, path) -> None:
    """A loader returns cases or raises InputError naming the file, when the suite is loaded or
    when a streaming format's cases are read; nothing else escapes."""
    from evalyard.suite_files import load_suite

    try:
        suite, origins = load_suite(path, app.registry)
        cases = suite.cases
    except InputError as exc:
        assert str(exc).startswith(str(path)), str(exc)
        assert "\n" not in str(exc)
        return
    assert cases and all(isinstance(c, Case) for c in cases) and len(origins) == len(cases)


def check_cli(app: Application, path, home) -> None:
    runs_before = _run_count(app, home)
    result = CliRunner().invoke(cli, ["run", str(path), "-s", "json_valid", "--json"], obj=app,
                                catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    if result.exit_code == 0:
        assert json.loads(result.output)["status"] == "completed"
        return
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert re.match(rf"Error: {re.escape(str(path))}(:\d+)?(: field '[^']*')?: \S", lines[0]), lines[0]
    assert _run_count(app, home) == runs_before  # nothing stored


def _run_count(app: Application, home) -> int:
    if not (home / "evalyard.db").exists():
        return 0
    return len(app.open_store().list_runs(limit=None))


def _file(tmp_path, extension: str, data: bytes):
    path = tmp_path / f"input{extension}"
    path.write_bytes(data)
    return path


@SETTINGS
@given(extension=st.sampled_from(FORMATS), data=st.binary(max_size=200))
def test_arbitrary_bytes_to_every_loader(app, tmp_path, extension, data):
    check_loader(app, _file(tmp_path, extension, data))


@SETTINGS
@given(extension=st.sampled_from(FORMATS), doc=documents)
def test_arbitrary_structures_to_every_loader(app, tmp_path, extension, doc):
    check_loader(app, _file(tmp_path, extension, serialise(extension, doc)))


@SETTINGS
@given(extension=st.sampled_from(FORMATS), data=st.one_of(st.binary(max_size=200), documents))
def test_every_installed_plugins_loader_too(installed_plugins, tmp_path, extension, data):
    """Plugins may replace the core's loaders for an extension (the Trust-Score plugin reads its
    own JSON shape): the same rule holds for whatever loader is installed."""
    raw = data if isinstance(data, bytes) else serialise(extension, data)
    check_loader(Application(), _file(tmp_path, extension, raw))


@SETTINGS
@given(extension=st.sampled_from(FORMATS), data=st.one_of(st.binary(max_size=120), documents))
def test_arbitrary_input_to_evalyard_run(app, tmp_path, isolated_home, extension, data):
    raw = data if isinstance(data, bytes) else serialise(extension, data)
    check_cli(app, _file(tmp_path, extension, raw), isolated_home)


def test_the_named_failures(app, tmp_path, isolated_home):
    """The cases that used to end in a traceback: non-UTF-8 text, an empty file, deep nesting."""
    latin = _file(tmp_path, ".jsonl", '{"id": "a", "candidate": "ok"}\n{"id": "b", "candidate": "caf\xe9"}\n'
                  .encode("latin-1"))
    check_cli(app, latin, isolated_home)
    result = CliRunner().invoke(cli, ["run", str(latin), "-s", "json_valid"], obj=app)
    assert f"{latin}:2: not UTF-8 text" in result.output
    for extension in FORMATS:
        empty = _file(tmp_path, extension, b"")
        check_cli(app, empty, isolated_home)
    deep = _file(tmp_path, ".json", b"[" * 100_000 + b"]" * 100_000)
    check_cli(app, deep, isolated_home)
    assert not (isolated_home / "evalyard.db").exists()
