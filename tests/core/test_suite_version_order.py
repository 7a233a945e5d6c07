"""A suite's version names the cases a run stores (issue 50, defect 3): two files whose cases differ
only in the key order of a nested object (a prompt shows ``metadata`` in that order) are two
versions, so each run's stored cases are its own file's. A file whose nested keys are in sorted
order keeps the version it always had."""

from __future__ import annotations

import hashlib
import json
import sqlite3

from click.testing import CliRunner

from evalyard.cli import cli

CASES = [
    {"id": "a", "candidate": "{}", "metadata": {"rubric": {"style": 1, "facts": 2}}},
    {"id": "b", "candidate": "{}", "note": "kept", "context": ["p"],
     "messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {
         "name": "f", "parameters": {"type": "object", "properties": {"z": {"type": "string"}, "a": {}}}}}]},
]


def reordered(record: dict) -> dict:
    """The record with every nested object's keys in the reverse order (top-level keys kept)."""
    def flip(value):
        if isinstance(value, dict):
            return {k: flip(value[k]) for k in reversed(list(value))}
        if isinstance(value, list):
            return [flip(v) for v in value]
        return value
    return {k: flip(v) if k != "id" else v for k, v in record.items()}


def run(app, path, db) -> str:
    result = CliRunner().invoke(cli, ["run", str(path), "-s", "json_valid", "--db", f"sqlite:///{db}", "--json"],
                                obj=app)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["run_id"]


def stored(db, run_id) -> tuple[str, list[tuple]]:
    with sqlite3.connect(db) as connection:
        version, suite_id = connection.execute(
            "SELECT suites.version, suites.id FROM runs JOIN suites ON suites.id = runs.suite_id WHERE runs.id = ?",
            (run_id,)).fetchone()
        rows = connection.execute("SELECT case_id, context, metadata, dialogue FROM cases WHERE suite_id = ? "
                                  "ORDER BY position", (suite_id,)).fetchall()
    return version, rows


def as_stored(record: dict) -> tuple:
    """What the store keeps of a record: its JSON columns, key order and all."""
    metadata = dict(record.get("metadata") or {})
    metadata.update({k: v for k, v in record.items() if k in ("note",)})
    dialogue = {k: record[k] for k in ("messages", "tools") if k in record} or None
    return (record["id"], json.dumps(record.get("context", [])), json.dumps(metadata),
            json.dumps(dialogue) if dialogue else None)


def test_two_files_differing_in_nested_key_order_are_two_versions(app, tmp_path):
    db = tmp_path / "runs.db"
    first, second = tmp_path / "one" / "cases.jsonl", tmp_path / "two" / "cases.jsonl"  # one suite name
    for path, records in ((first, CASES), (second, [reordered(r) for r in CASES])):
        path.parent.mkdir()
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    first_version, first_rows = stored(db, run(app, first, db))
    second_version, second_rows = stored(db, run(app, second, db))
    assert first_version != second_version
    assert first_rows == [as_stored(r) for r in CASES]
    assert second_rows == [as_stored(reordered(r)) for r in CASES]
    # the same file again: the same version, its cases stored once
    again_version, _ = stored(db, run(app, second, db))
    assert again_version == second_version
    with sqlite3.connect(db) as connection:
        assert connection.execute("SELECT COUNT(*) FROM cases").fetchone()[0] == 2 * len(CASES)


def test_sorted_keys_keep_the_version_they_always_had(app, tmp_path):
    path = tmp_path / "cases.jsonl"
    records = [{"id": "a", "candidate": "{}", "metadata": {"rubric": {"facts": 2, "style": 1}}}]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    version, _ = stored(tmp_path / "runs.db", run(app, path, tmp_path / "runs.db"))
    digest = hashlib.sha256()  # the version as 98440b5 computed it
    for r in records:
        content = {"id": r["id"], "input": None, "reference": None, "context": [], "metadata": r["metadata"]}
        digest.update(json.dumps(content, sort_keys=True, ensure_ascii=False).encode() + b"\n")
    assert version == digest.hexdigest()[:16]
