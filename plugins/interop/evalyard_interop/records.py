"""What both foreign formats need: where each record of a JSON array starts, and foreign values
as case text."""

from __future__ import annotations

import json
from typing import Any

from evalyard import InputError

_BLANK = " \t\r\n"


def _skip_blank(text: str, pos: int) -> int:
    while text[pos] in _BLANK:
        pos += 1
    return pos


def array_item_lines(text: str, keys: tuple[str, ...]) -> list[int] | None:
    """The line each item of the array found under ``keys`` (object keys, from the top) starts on,
    so an error can name the line of its record; None when the text is not laid out that way.

    Walks the document with the JSON decoder (strings and their escapes are its business), skipping
    every value on the way that is not on the path.
    """
    decoder = json.JSONDecoder()
    pos = 0
    try:
        for key in keys:
            pos = _skip_blank(text, pos)
            if text[pos] != "{":
                return None
            pos += 1
            while True:
                pos = _skip_blank(text, pos)
                if text[pos] == ",":
                    pos += 1
                    continue
                if text[pos] != '"':
                    return None
                name, pos = decoder.raw_decode(text, pos)
                pos = _skip_blank(text, pos)
                if text[pos] != ":":
                    return None
                pos = _skip_blank(text, pos + 1)
                if name == key:
                    break
                _, pos = decoder.raw_decode(text, pos)
        if text[pos] != "[":
            return None
        lines, line, counted = [], 1, 0
        pos += 1
        while True:
            pos = _skip_blank(text, pos)
            if text[pos] == "]":
                return lines
            if text[pos] == ",":
                pos += 1
                continue
            line += text.count("\n", counted, pos)  # counted incrementally: one pass over the text
            counted = pos
            lines.append(line)
            _, pos = decoder.raw_decode(text, pos)
    except (ValueError, IndexError):
        return None


def as_text(value: Any) -> str | None:
    """A foreign value as case text: text as it is, numbers as their digits (the other tool put them
    into prompts that way), objects and lists as JSON; None stays absent."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def as_context(value: Any, *, path: str, line: int | None, field: str) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise InputError("expected text or a list of texts for the context", path=path, line=line, field=field)


def source_field_map(field_map: dict[str, str] | None, path: str, source: str) -> dict[str, str]:
    """``--field`` for a foreign format: case fields taken from ``source`` (test variables, a
    sample's metadata). The metadata is the format's own, built from the record: not mappable."""
    field_map = dict(field_map or {})
    if "metadata" in field_map:
        raise InputError(f"--field metadata=...: the metadata is built from the record (with {source} in it); map "
                         f"id, input, candidate, reference or context to one of {source}", path=path)
    return field_map


def override_fields(fields: dict[str, Any], source: dict[str, Any], field_map: dict[str, str], *, path: str,
                    line: int | None, prefix: str) -> list[str]:
    """``--field CASE_FIELD=NAME``: each mapped case field of ``fields`` replaced by ``source[NAME]``
    (promptfoo's test vars, an inspect sample's metadata; a name the record lacks leaves the field
    absent). Returns the context, which only a mapping gives."""
    for name in ("input", "candidate", "reference"):
        if name in field_map:
            fields[name] = as_text(source.get(field_map[name]))
    if "id" in field_map:
        fields["id"] = record_id(source.get(field_map["id"]), path=path, line=line, field=f"{prefix}.{field_map['id']}")
    if "context" not in field_map:
        return []
    return as_context(source.get(field_map["context"]), path=path, line=line, field=f"{prefix}.{field_map['context']}")


def record_id(value: Any, *, path: str, line: int | None, field: str) -> str:
    if isinstance(value, (str, int)) and not isinstance(value, bool) and value != "":
        return str(value)
    raise InputError(f"expected text or an integer, got {type(value).__name__}", path=path, line=line, field=field)
