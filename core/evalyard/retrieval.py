"""A case's retrieval: what the system retrieved, ranked, and what is relevant, checked at the door.

- ``retrieved``: the ranked passages, each ``{"id": ..., "text": ..., "score": ...}`` (``text``
  and ``score`` optional; an id may be given as a number and is kept as text), or a plain text,
  which gets its position as its id (``"1"`` for the first). Either every passage has a score or
  none has: with scores, retrieval scorers rank them as trec_eval does (score descending, ties by
  id descending); without, the list's order is the ranking. A doc id appears once per ranking.
- ``relevant``: the relevant doc ids (``["d1", "d7"]``: grade 1 each), or ``{id: grade}`` as in
  TREC qrels (integer grades; 1 or more is relevant, 0 and below not; graded measures use them).
- ``reference_contexts``: the passages a right answer needs, as texts.

A case with ``context`` and no ``retrieved`` is read as a retrieval of its passages, ids by
position (the retrieval scorers do so); one with ``retrieved`` passages that all have text and no
``context`` gets their texts, in rank order, as its context (what the judges of an answer read).
"""

from __future__ import annotations

import math
from typing import Any

from .errors import InputError

RETRIEVED_KEYS = frozenset({"id", "text", "score", "metadata"})


def check_retrieved(value: Any, path: str, line: int | None, field: str = "retrieved") -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise InputError("expected a list of passages ({id, text, score} objects or texts)", path=path, line=line,
                         field=field)
    passages: list[dict[str, Any]] = []
    seen: set[str] = set()
    for n, item in enumerate(value):
        where = f"{field}[{n}]"
        if isinstance(item, str):
            passage: dict[str, Any] = {"id": str(n + 1), "text": item}
        elif isinstance(item, dict):
            unknown = sorted(set(item) - RETRIEVED_KEYS)
            if unknown:
                raise InputError(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(RETRIEVED_KEYS))})",
                                 path=path, line=line, field=where)
            passage = {"id": _doc_id(item.get("id"), path, line, f"{where}.id")}
            if item.get("text") is not None:
                if not isinstance(item["text"], str):
                    raise InputError("expected text", path=path, line=line, field=f"{where}.text")
                passage["text"] = item["text"]
            if item.get("score") is not None:
                passage["score"] = _score(item["score"], path, line, f"{where}.score")
            if item.get("metadata") is not None:
                if not isinstance(item["metadata"], dict):
                    raise InputError("expected an object", path=path, line=line, field=f"{where}.metadata")
                passage["metadata"] = dict(item["metadata"])
        else:
            raise InputError(f"expected a passage object or a text, got {type(item).__name__}", path=path, line=line,
                             field=where)
        if passage["id"] in seen:
            raise InputError(f"doc id {passage['id']!r} is retrieved twice in one ranking", path=path, line=line,
                             field=f"{where}.id")
        seen.add(passage["id"])
        passages.append(passage)
    scored = sum(1 for p in passages if "score" in p)
    if 0 < scored < len(passages):
        missing = next(n for n, p in enumerate(passages) if "score" not in p)
        raise InputError("either every passage has a score or none has", path=path, line=line,
                         field=f"{field}[{missing}].score")
    return passages


def check_relevant(value: Any, path: str, line: int | None, field: str = "relevant") -> dict[str, int]:
    if isinstance(value, list):
        grades = {}
        for n, doc in enumerate(value):
            grades[_doc_id(doc, path, line, f"{field}[{n}]")] = 1
        return grades
    if isinstance(value, dict):
        grades = {}
        for doc, grade in value.items():
            if isinstance(grade, bool) or not isinstance(grade, int):
                raise InputError(f"a grade is a whole number, not {grade!r}", path=path, line=line,
                                 field=f"{field}.{doc}")
            grades[str(doc)] = grade
        return grades
    raise InputError("expected a list of relevant doc ids, or {doc id: grade}", path=path, line=line, field=field)


def check_reference_contexts(value: Any, path: str, line: int | None, field: str = "reference_contexts") -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(p, str) for p in value):
        return list(value)
    raise InputError("expected a text or a list of texts", path=path, line=line, field=field)


def ranked_passages(retrieved: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The passages in their ranking's order, as trec_eval ranks them: with scores, score
    descending, ties by doc id descending (``strcmp`` order, compared as UTF-8 bytes), whatever
    order they came in; without scores, the list's own order. Retrieval scorers rank this way,
    and so does every view that shows a ranking."""
    if not retrieved or any("score" not in p for p in retrieved):
        return list(retrieved)
    by_id = sorted(retrieved, key=lambda p: p["id"].encode("utf-8"), reverse=True)
    return sorted(by_id, key=lambda p: p["score"], reverse=True)  # stable: equal scores keep the id order


def passages_as_context(retrieved: list[dict[str, Any]]) -> list[str]:
    """The texts of a retrieval in rank order (the order every retrieval scorer ranks by), as the
    ``context`` the judges of an answer read; [] when some passage has no text."""
    if any(p.get("text") is None for p in retrieved):
        return []
    return [p["text"] for p in ranked_passages(retrieved)]


def generated_context(generated: dict[str, Any]) -> dict[str, Any]:
    """A run's generated fields with ``context`` added when they hold a retrieval whose passages
    all have text: a judge of the answer (faithfulness, hallucination) then reads the passages
    this run retrieved, not the ones the data held."""
    retrieved = generated.get("retrieved")
    context = passages_as_context(retrieved) if retrieved is not None else []
    return {**generated, "context": context} if context else generated


def _doc_id(value: Any, path: str, line: int | None, field: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise InputError(f"a doc id is a text or a whole number, not {value!r}", path=path, line=line, field=field)
    return str(value)


def _score(value: Any, path: str, line: int | None, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"a score is a finite number, not {value!r}", path=path, line=line, field=field)
    return float(value)


CHECKS = {"retrieved": check_retrieved, "relevant": check_relevant, "reference_contexts": check_reference_contexts}
