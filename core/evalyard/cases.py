"""Case parsing: a raw record to a checked ``Case``, data files read as UTF-8 and JSON, and the
core's data formats (JSONL, JSON, CSV).

A library of the core, used by suite loading, the Python API and plugins' own formats (through
the public plugin API: ``case_from_record``, ``read_case_file``, ``load_json_cases``...); the
built-in plugin ``evalyard.builtins.loaders`` only registers the formats. Every loader returns
``(cases, origins)`` where ``origins[i]`` is ``"file:line"`` for case i, so later checks can
name the exact line of a bad case.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Iterable, Iterator

from .dialogue import CHECKS, check_content, last_user_text, text_of
from .errors import InputError
from .retrieval import CHECKS as RETRIEVAL_CHECKS
from .retrieval import passages_as_context
from .scoring import CASE_FIELDS, STRUCTURED_FIELDS, TEXT_FIELDS, Case
from .valid_text import check_text

KNOWN_FIELDS = CASE_FIELDS
#: each structured field's check (a dialogue's, a retrieval's): the value as the case keeps it
FIELD_CHECKS = {**CHECKS, **RETRIEVAL_CHECKS}


def apply_field_map(record: dict[str, Any], field_map: dict[str, str]) -> dict[str, Any]:
    """Rename source columns to case fields: ``field_map`` is ``{case_field: source_column}``."""
    if not field_map:
        return record
    out = dict(record)
    for case_field, column in field_map.items():
        if column in record:
            out.pop(column)
            out[case_field] = record[column]
    return out


def check_case_text(case: Case, origin: str) -> None:
    """A built case's fields checked as ``check_text`` checks a record (a plugin's format builds
    cases itself): ``origin`` is its ``file:line``."""
    path, _, line = origin.rpartition(":")
    if not line.isdigit():
        path, line = origin, ""
    check_text(case.to_dict(), path=path or origin, line=int(line) if line else None)


def case_from_record(record: Any, *, path: str, line: int, index: int, field_map: dict[str, str]) -> Case:
    """Check one raw record's fields and types and build a Case; extra keys go to metadata.

    A record holding a dialogue (an OpenAI chat record: ``messages`` and ``tools``) is a case as
    it is: without an ``input``, the last user message's content is its input, so scorers of
    single answers read it too."""
    if not isinstance(record, dict):
        raise InputError(f"expected an object with case fields, got {type(record).__name__}", path=path, line=line)
    check_text(record, path=path, line=line)  # every string, keys too, named as the file names it
    record = apply_field_map(record, field_map)

    raw_id = record.get("id")
    if raw_id is None or raw_id == "":
        case_id = str(index + 1)
    elif isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool):
        case_id = str(raw_id)
    else:
        raise InputError(f"expected text or an integer, got {type(raw_id).__name__}", path=path, line=line, field="id")

    found: dict[str, Any] = {}  # the case's media by hash (evalyard.media)
    input_parts = _input_parts(record, path, line, found)
    texts = {}
    for name in TEXT_FIELDS:
        value = record.get(name)
        if name == "input" and input_parts is not None:
            value = text_of(input_parts)
        if value is not None and not isinstance(value, str):
            raise InputError(
                f"expected text, got {type(value).__name__} {value!r:.40} (quote it)", path=path, line=line, field=name
            )
        texts[name] = value

    context = record.get("context")
    if context is None or context == "":
        context = []
    elif isinstance(context, str):
        context = [context]
    elif isinstance(context, list) and all(isinstance(p, str) for p in context):
        context = list(context)
    else:
        raise InputError("expected text or a list of texts", path=path, line=line, field="context")

    metadata = record.get("metadata")
    if metadata is None:
        metadata = {}
    elif not isinstance(metadata, dict):
        raise InputError(f"expected an object, got {type(metadata).__name__}", path=path, line=line, field="metadata")
    else:
        metadata = dict(metadata)
    for key, value in record.items():
        if key not in KNOWN_FIELDS:
            metadata.setdefault(key, value)
    structured = {name: FIELD_CHECKS[name](record[name], path, line, name)
                  for name in STRUCTURED_FIELDS if name in FIELD_CHECKS and record.get(name) is not None}
    if structured.get("messages"):
        _read_message_media(structured["messages"], path, line, found)
    if input_parts is not None:
        structured["input_parts"] = input_parts
    if texts["input"] is None and structured.get("messages"):
        texts["input"] = last_user_text(structured["messages"])
    if not context and structured.get("retrieved"):  # the judges of the answer read what was retrieved
        context = passages_as_context(structured["retrieved"])
    return Case(id=case_id, context=context, metadata=metadata, media=found or None, **texts, **structured)


def _input_parts(record: dict[str, Any], path: str, line: int, found: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A case's input given as content parts (``input: [...]``; ``input_parts`` as an export
    writes it beside the input's text), checked and with its media read; None for a text input."""
    field = "input"
    parts = record.get("input")
    if not isinstance(parts, list):
        parts, field = record.get("input_parts"), "input_parts"
        if parts is None:
            return None
    from .media import resolve

    return resolve(check_content(parts, path, line, field), path=path, line=line, field=field, found=found)


def _read_message_media(messages: list[dict[str, Any]], path: str, line: int, found: dict[str, Any]) -> None:
    """Each message's media parts read in place (a message of an inline YAML case keeps its line)."""
    from .media import MEDIA_KINDS, resolve

    for n, message in enumerate(messages):
        content = message.get("content")
        if isinstance(content, list) and any(p.get("type") in MEDIA_KINDS for p in content):
            message["content"] = resolve(content, path=path, line=line, field=f"messages[{n}].content", found=found,
                                         line_of=lambda message=message: getattr(message, "line", 0))


def read_text(path: str | Path) -> str:
    """A data file's text: UTF-8 (a byte-order mark is dropped), or an InputError naming the line
    of the first byte that is not UTF-8."""
    path = str(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                         "save the file as UTF-8", path=path, line=line) from None


def parse_json(text: str, path: str, line: int | None) -> Any:
    """``json.loads`` with every failure as an InputError (malformed, or nested too deeply)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = line if line is not None else exc.lineno
        raise InputError(f"malformed JSON: {exc.msg} (column {exc.colno})", path=path, line=where) from None
    except RecursionError:
        raise InputError("JSON nested too deeply", path=path, line=line or 1) from None


def check_unique_ids(cases: list[Case], origins: list[str]) -> None:
    seen: dict[str, str] = {}
    for case, origin in zip(cases, origins):
        if case.id in seen:
            path, _, line = origin.rpartition(":")
            raise InputError(
                f"duplicate case id {case.id!r} (first at {seen[case.id]})", path=path, line=int(line), field="id"
            )
        seen[case.id] = origin


def _decode_line(data: bytes, path: str, line_no: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte 0x{data[exc.start]:02x} at column {exc.start + 1}); "
                         "save the file as UTF-8", path=path, line=line_no) from None


def iter_jsonl(path: str | Path, field_map: dict[str, str] | None = None) -> Iterator[tuple[Case, str]]:
    """(case, ``file:line``) for each record of a JSONL file, read one line at a time: a file of
    any size streams through in constant memory. Checks each record; ids are checked by the caller."""
    path = str(path)
    field_map = field_map or {}
    index = 0
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None
    with handle:
        for line_no, raw in enumerate(handle, start=1):
            if line_no == 1 and raw.startswith(b"\xef\xbb\xbf"):  # a byte-order mark
                raw = raw[3:]
            if not raw.strip():
                continue
            record = parse_json(_decode_line(raw, path, line_no), path, line_no)
            yield case_from_record(record, path=path, line=line_no, index=index, field_map=field_map), f"{path}:{line_no}"
            index += 1


def _collect(pairs: Iterable[tuple[Case, str]]) -> tuple[list[Case], list[str]]:
    cases, origins = [], []
    for case, origin in pairs:
        cases.append(case)
        origins.append(origin)
    check_unique_ids(cases, origins)
    return cases, origins


def load_jsonl(path: str | Path, field_map: dict[str, str] | None = None) -> tuple[list[Case], list[str]]:
    """A whole JSONL file as (cases, origins), ids checked: for files that fit in memory."""
    return _collect(iter_jsonl(path, field_map))


def load_json(path: str | Path, field_map: dict[str, str] | None = None) -> tuple[list[Case], list[str]]:
    path = str(path)
    data = parse_json(read_text(path), path, None)
    if isinstance(data, dict) and isinstance(data.get("cases"), list):
        data = data["cases"]
    if not isinstance(data, list):
        raise InputError("expected a list of cases (or an object with a 'cases' list)", path=path, line=1)
    cases = [
        case_from_record(record, path=path, line=1, index=i, field_map=field_map or {}) for i, record in enumerate(data)
    ]
    origins = [f"{path}:1"] * len(cases)
    check_unique_ids(cases, origins)
    return cases, origins


def _csv_value(column: str, value: str, path: str, line: int) -> Any:
    """CSV cells are text; context and metadata may hold JSON (a list / an object), and the
    structured fields (a dialogue, a retrieval) do."""
    if column in STRUCTURED_FIELDS and not value:
        return None
    if ((column == "context" and value.startswith("[")) or (column == "metadata" and value)
            or column in STRUCTURED_FIELDS):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON: {exc.msg}", path=path, line=line, field=column) from None
        except RecursionError:
            raise InputError("JSON nested too deeply", path=path, line=line, field=column) from None
    if column == "metadata":
        return None
    return value


def iter_csv(path: str | Path, field_map: dict[str, str] | None = None) -> Iterator[tuple[Case, str]]:
    """(case, ``file:line``) for each row of a CSV file with a header row, read as it streams."""
    path = str(path)
    field_map = field_map or {}
    try:
        handle = open(path, encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None
    with handle:
        try:
            yield from _csv_rows(handle, path, field_map)
        except UnicodeDecodeError:
            read_text(path)  # names the line of the first byte that is not UTF-8
            raise


def _csv_rows(handle, path: str, field_map: dict[str, str]) -> Iterator[tuple[Case, str]]:
    reader = csv.reader(handle, strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise InputError("empty CSV file (no header row)", path=path, line=1) from None
    except csv.Error as exc:
        raise InputError(f"malformed CSV: {exc}", path=path, line=1) from None
    if len(set(header)) != len(header):
        raise InputError("duplicate column names in the header", path=path, line=1)
    columns = [next((f for f, c in field_map.items() if c == h), h) for h in header]
    start_line = 2
    index = 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise InputError(f"malformed CSV: {exc}", path=path, line=reader.line_num) from None
        line_no = start_line
        start_line = reader.line_num + 1
        if not row or all(not cell for cell in row):
            continue
        if len(row) != len(header):
            raise InputError(f"expected {len(header)} columns, found {len(row)}", path=path, line=line_no)
        record = {col: _csv_value(col, cell, path, line_no) for col, cell in zip(columns, row)}
        # An empty CSV cell means "absent" for reference and input, not the empty string.
        for name in ("reference", "input"):
            if record.get(name) == "":
                record[name] = None
        yield case_from_record(record, path=path, line=line_no, index=index, field_map={}), f"{path}:{line_no}"
        index += 1

