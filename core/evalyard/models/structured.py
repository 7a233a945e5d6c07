"""Structured (JSON) answers: a tolerant reader, a schema check (jsonschema), and the wording
used when a model cannot be given the schema through the API.

The reader takes the **last** JSON object in the reply that satisfies the schema, so a
judge that quotes an object from the text it judges and then gives its own answer is
read by its own answer.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


class SchemaMismatch(ValueError):
    pass


def check_schema(value: Any, schema: dict[str, Any], path: str = "$") -> None:
    """Raise SchemaMismatch naming the first place where ``value`` breaks the JSON schema
    (checked by ``jsonschema``, Draft 2020-12)."""
    errors = sorted(_validator(json.dumps(schema, sort_keys=True)).iter_errors(value),
                    key=lambda error: [str(part) for part in error.absolute_path])
    if errors:
        error = errors[0]
        where = path + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        raise SchemaMismatch(f"{where}: {error.message}")


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> Any:
    # A reply is checked against the same few schemas over and over: build each validator once.
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(schema_json))


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
