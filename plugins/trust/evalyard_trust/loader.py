"""trust-eval's data format as evalyard cases.

``{"data": [{"question", "answers": [[alias, ...], ...], "docs": [{"title", "text",
"answers_found"}], "output"}]}`` as one JSON document (trust-eval's own files), or one such
record per line (JSON Lines). The plugin registers it as the data format ``trust-eval``: files
are read as it when a suite says ``format: trust-eval``, the CLI ``--format trust-eval``, or the
file name ends in ``.trust.json`` / ``.trust.jsonl``. Plain ``.json`` / ``.jsonl`` files are
always evalyard's own format, whatever keys their records have.

A record becomes a case: ``input`` = question, ``candidate`` = output (absent: a generator can
fill it), ``context`` = each document as ``"Title: ...\\n..."``, ``metadata`` = answers, docs and
every other key (``id`` becomes the case id). Bad records are one-line errors naming the line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from evalyard import Case, InputError, check_unique_ids

from .text import format_document

FORMAT = "trust-eval"
EXTENSIONS = (".trust.json", ".trust.jsonl")


def check_record(record: Any, path: str, line: int) -> None:
    """Raise InputError (file, line, field) for anything the metrics cannot use."""
    if not isinstance(record, dict):
        raise InputError(f"expected an object (question, answers, docs, output), got {type(record).__name__}",
                         path=path, line=line)
    if not isinstance(record.get("question"), str):
        raise InputError("expected the question as text", path=path, line=line, field="question")
    answers = record.get("answers")
    if not isinstance(answers, list) or not answers:
        raise InputError("expected a non-empty list of gold answers, each a list of aliases ([[\"Paris\"], ...])",
                         path=path, line=line, field="answers")
    for n, aliases in enumerate(answers):
        if isinstance(aliases, str):
            raise InputError(f"expected a list of aliases, got the text {aliases!r:.40} (write [[\"...\"]]: a bare "
                             "string would be read one character at a time)", path=path, line=line,
                             field=f"answers[{n}]")
        if not isinstance(aliases, list) or not aliases or not all(isinstance(a, str) for a in aliases):
            raise InputError("expected a non-empty list of texts", path=path, line=line, field=f"answers[{n}]")
    docs = record.get("docs")
    if not isinstance(docs, list):
        raise InputError("expected a list of documents", path=path, line=line, field="docs")
    for n, doc in enumerate(docs):
        where = f"docs[{n}]"
        if not isinstance(doc, dict):
            raise InputError("expected an object with title, text and answers_found", path=path, line=line,
                             field=where)
        for key in ("title", "text"):
            if key in doc and not isinstance(doc[key], str):
                raise InputError("expected text", path=path, line=line, field=f"{where}.{key}")
        if not isinstance(doc.get("text", doc.get("sent")), str):
            raise InputError("expected the document text", path=path, line=line, field=f"{where}.text")
        found = doc.get("answers_found")
        if (not isinstance(found, list) or len(found) != len(answers)
                or not all(v in (0, 1) and not isinstance(v, float) for v in found)):
            raise InputError(f"expected one 0/1 per gold answer ({len(answers)})", path=path, line=line,
                             field=f"{where}.answers_found")
    output = record.get("output")
    if output is not None and not isinstance(output, str):
        kind = "a list (several samples: give one output per record)" if isinstance(output, list) else \
            type(output).__name__
        raise InputError(f"expected the output as text, got {kind}", path=path, line=line, field="output")


def case_from_record(record: dict[str, Any], *, path: str, line: int, index: int,
                     field_map: dict[str, str]) -> Case:
    check_record(record, path, line)
    keys = {"id": "id", "candidate": "output"}
    keys.update({k: v for k, v in field_map.items() if k in keys})
    raw_id = record.get(keys["id"])
    if raw_id is None or raw_id == "":
        case_id = str(index + 1)
    elif isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool):
        case_id = str(raw_id)
    else:
        raise InputError("expected text or an integer", path=path, line=line, field=keys["id"])
    candidate = record.get(keys["candidate"])
    if candidate is not None and not isinstance(candidate, str):
        raise InputError("expected the output as text", path=path, line=line, field=keys["candidate"])
    metadata = {k: v for k, v in record.items() if k not in (keys["id"], "question", keys["candidate"])}
    return Case(id=case_id, input=record["question"], candidate=candidate,
                context=[format_document(doc) for doc in record["docs"]], metadata=metadata)


def _record_lines(text: str, count: int) -> list[int]:
    """The line each record of the top-level ``data`` array starts on (1 for all if not found)."""
    match = re.match(r'\s*\{\s*"data"\s*:\s*\[', text)
    if match is None:
        return [1] * count
    decoder = json.JSONDecoder()
    lines, pos = [], match.end()
    try:
        while len(lines) < count:
            while text[pos] in " \t\r\n,":
                pos += 1
            lines.append(text.count("\n", 0, pos) + 1)
            _, pos = decoder.raw_decode(text, pos)
    except (ValueError, IndexError):
        return [1] * count
    return lines


def load_trust_eval(path: str | Path, field_map: dict[str, str] | None = None):
    """A trust-eval file: one JSON document with a ``data`` list (or a bare list of records), or
    JSON Lines with one record per line (a ``.jsonl`` ending says so)."""
    from evalyard import read_case_file

    path = str(path)
    text = read_case_file(path)
    if path.lower().endswith(".jsonl") or not text.lstrip().startswith(("{", "[")):
        return _load_lines(text, path, field_map or {})
    try:
        data = json.loads(text)
    except json.JSONDecodeError:  # several records, one per line
        return _load_lines(text, path, field_map or {})
    except RecursionError:
        raise InputError("JSON nested too deeply", path=path, line=1) from None
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        records = data["data"]
    elif isinstance(data, list):
        records = data
    elif isinstance(data, dict):  # a single record on one line
        return _load_lines(text, path, field_map or {})
    else:
        raise InputError("expected trust-eval data: an object with a 'data' list of records, or one record per "
                         "line", path=path, line=1)
    lines = _record_lines(text, len(records))
    cases = [case_from_record(r, path=path, line=line, index=i, field_map=field_map or {})
             for i, (r, line) in enumerate(zip(records, lines))]
    origins = [f"{path}:{line}" for line in lines]
    check_unique_ids(cases, origins)
    return cases, origins


def _load_lines(text: str, path: str, field_map: dict[str, str]):
    from evalyard import parse_case_json

    cases, origins = [], []
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        record = parse_case_json(line, path, n)
        cases.append(case_from_record(record, path=path, line=n, index=len(cases), field_map=field_map))
        origins.append(f"{path}:{n}")
    check_unique_ids(cases, origins)
    return cases, origins
