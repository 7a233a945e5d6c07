"""Structured (JSON) answers: a tolerant reader, a small schema check, and the wording
used when a model cannot be given the schema through the API.

The reader takes the **last** JSON object in the reply that satisfies the schema, so a
judge that quotes an object from the text it judges and then gives its own answer is
read by its own answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


class SchemaMismatch(ValueError):
    pass


def check_schema(value: Any, schema: dict[str, Any], path: str = "$") -> None:
    """Raise SchemaMismatch when ``value`` breaks the schema.

    Covers what answer schemas use: type, properties, required, enum, items,
    minimum/maximum, additionalProperties false. Unknown keywords are ignored.
    """
    if "enum" in schema and value not in schema["enum"]:
        raise SchemaMismatch(f"{path}: {value!r} is not one of {schema['enum']}")
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        if not any(_is_type(value, k) for k in kinds):
            raise SchemaMismatch(f"{path}: expected {' or '.join(kinds)}, got {type(value).__name__}")
    if isinstance(value, dict):
        for name in schema.get("required", []):
            if name not in value:
                raise SchemaMismatch(f"{path}: missing required field {name!r}")
        props = schema.get("properties", {})
        for name, item in value.items():
            if name in props:
                check_schema(item, props[name], f"{path}.{name}")
            elif schema.get("additionalProperties") is False:
                raise SchemaMismatch(f"{path}: unexpected field {name!r}")
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for n, item in enumerate(value):
            check_schema(item, schema["items"], f"{path}[{n}]")
    if _is_type(value, "number"):
        if "minimum" in schema and value < schema["minimum"]:
            raise SchemaMismatch(f"{path}: {value} is below the minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            raise SchemaMismatch(f"{path}: {value} is above the maximum {schema['maximum']}")


def _is_type(value: Any, kind: str) -> bool:
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool) or (isinstance(value, float) and value.is_integer())
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "null":
        return value is None
    return True


def _objects(text: str) -> list[Any]:
    """Every top-level JSON value that starts with ``{`` in the text, in order."""
    decoder = json.JSONDecoder()
    found = []
    position = 0
    while True:
        start = text.find("{", position)
        if start < 0:
            return found
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            position = start + 1
            continue
        found.append(value)
        position = end


def _loosened(text: str) -> str:
    """Common near-JSON slips: trailing commas, Python literals."""
    text = re.sub(r",\s*([}\]])", r"\1", text)
    return re.sub(r"\b(True|False|None)\b", lambda m: {"True": "true", "False": "false", "None": "null"}[m[1]], text)


def parse_json_answer(text: str, schema: dict[str, Any] | None = None) -> Any:
    """The last JSON object in ``text`` that fits ``schema``; ValueError naming why none does."""
    if text is None or not text.strip():
        raise ValueError("the reply is empty")
    candidates: list[Any] = []
    for source in (text, _loosened(text)):
        candidates = _objects(source)
        for block in _FENCE.findall(source):
            candidates.extend(_objects(block))
        if candidates:
            break
    if not candidates:
        raise ValueError("the reply holds no JSON object")
    last_problem = ""
    for value in reversed(candidates):
        if schema is None:
            return value
        try:
            check_schema(value, schema)
            return value
        except SchemaMismatch as exc:
            last_problem = str(exc)
    raise ValueError(f"no JSON object in the reply fits the schema ({last_problem})")


def schema_instructions(schema: dict[str, Any]) -> str:
    """Told to a model that cannot take the schema through the API."""
    return ("Reply with one JSON object and nothing after it. It must match this JSON schema:\n"
            + json.dumps(schema, indent=2, ensure_ascii=False))


def repair_message(problem: str, schema: dict[str, Any]) -> str:
    """The follow-up turn of the one repair call."""
    return (f"That reply could not be used: {problem}. Answer again with only one JSON object matching "
            "this schema, with no text before or after it:\n" + json.dumps(schema, ensure_ascii=False))


def response_format_for(schema: dict[str, Any], name: str = "answer") -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}
