"""Checklists as data: items (question, weight, category, metadata) and where a case's checklist comes from.

A case's checklist is given in ``metadata.checklist`` as

- a list of questions (``["Is it a haiku?", ...]``),
- a list of item objects (``{"question": ..., "weight": 0-100, "category": ..., "metadata": {...}}``),
- a checklist object (``{"items": [...], ...}``, what ``evalyard checklist generate`` writes), or
- a path to a JSON file holding one of the above (relative paths are read from the working directory).

A checklists file (JSONL, one checklist a line with ``case_id``; a line without ``case_id`` applies to
every case) is what ``evalyard checklist generate`` writes and what the scorer's ``checklists=`` reads.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalyard import InputError

DEFAULT_WEIGHT = 100.0
UNGROUPED = "ungrouped"


@dataclass(frozen=True)
class ChecklistItem:
    question: str
    weight: float = DEFAULT_WEIGHT
    category: str | None = None
    id: str = ""
    metadata: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "question": self.question, "weight": self.weight, "category": self.category,
                "metadata": dict(self.metadata)}


@dataclass
class Checklist:
    items: list[ChecklistItem]
    source_method: str = "given"
    generation_level: str | None = None
    input: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str = ""

    def __post_init__(self) -> None:
        # Items without an id get a stable one (their position), so answers can be keyed by it.
        self.items = [item if item.id else ChecklistItem(item.question, item.weight, item.category,
                                                         f"q{n + 1}", item.metadata)
                      for n, item in enumerate(self.items)]
        if not self.id:
            text = json.dumps([i.to_dict() for i in self.items], sort_keys=True, ensure_ascii=False)
            self.id = hashlib.sha256(text.encode()).hexdigest()[:12]

    def __len__(self) -> int:
        return len(self.items)

    def by_category(self) -> dict[str, "Checklist"]:
        """Sub-checklists per category; uncategorised items under ``"ungrouped"``."""
        groups: dict[str, list[ChecklistItem]] = {}
        for item in self.items:
            groups.setdefault(item.category or UNGROUPED, []).append(item)
        return {name: Checklist(items, self.source_method, self.generation_level, self.input,
                                {**self.metadata, "category": name}, f"{self.id}_{name}")
                for name, items in groups.items()}

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "items": [i.to_dict() for i in self.items], "source_method": self.source_method,
                "generation_level": self.generation_level, "input": self.input, "metadata": dict(self.metadata)}


def item_from(value: Any, where: str, index: int) -> ChecklistItem:
    if isinstance(value, str):
        if not value.strip():
            raise InputError(f"{where}: item {index + 1} is an empty question")
        return ChecklistItem(value.strip())
    if not isinstance(value, dict):
        raise InputError(f"{where}: item {index + 1} must be a question or an object with `question`, "
                         f"got {type(value).__name__}")
    unknown = sorted(set(value) - {"id", "question", "weight", "category", "metadata"})
    if unknown:
        raise InputError(f"{where}: item {index + 1} has unknown field {unknown[0]!r} "
                         "(known: question, weight, category, metadata, id)")
    question = value.get("question")
    if not isinstance(question, str) or not question.strip():
        raise InputError(f"{where}: item {index + 1} has no `question`")
    weight = value.get("weight", DEFAULT_WEIGHT)
    if weight is None:
        weight = DEFAULT_WEIGHT
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 <= weight <= 100:
        raise InputError(f"{where}: item {index + 1} has weight {weight!r}; weights are numbers from 0 to 100")
    category = value.get("category")
    if category is not None and not isinstance(category, str):
        raise InputError(f"{where}: item {index + 1} has a category that is not text: {category!r}")
    metadata = value.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InputError(f"{where}: item {index + 1} has metadata that is not a mapping")
    return ChecklistItem(question.strip(), float(weight), category or None, str(value.get("id") or ""), metadata)


def checklist_from(value: Any, where: str, *, base: Path | None = None) -> Checklist:
    """A checklist from any of the accepted shapes; InputError naming ``where`` otherwise."""
    if isinstance(value, str):
        path = Path(value).expanduser()
        if not path.is_absolute() and base is not None:
            path = base / path
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"{where}: cannot read checklist file {value!r} ({exc.strerror})") from None
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: checklist file {value!r} is not JSON ({exc.msg})",
                             path=str(path), line=exc.lineno) from None
        if isinstance(loaded, str):
            raise InputError(f"{where}: checklist file {value!r} holds a string, not a checklist")
        return checklist_from(loaded, str(path), base=path.parent)
    if isinstance(value, list):
        return Checklist([item_from(v, where, n) for n, v in enumerate(value)])
    if isinstance(value, dict):
        if "items" not in value:
            raise InputError(f"{where}: a checklist object needs `items`")
        items = value["items"]
        if not isinstance(items, list):
            raise InputError(f"{where}: `items` must be a list")
        return Checklist([item_from(v, where, n) for n, v in enumerate(items)],
                         source_method=str(value.get("source_method") or "given"),
                         generation_level=value.get("generation_level"), input=value.get("input"),
                         metadata=dict(value.get("metadata") or {}), id=str(value.get("id") or ""))
    raise InputError(f"{where}: a checklist is a list of questions or items, an object with `items`, or a path; "
                     f"got {type(value).__name__}")


def load_checklists_file(path: str | Path) -> tuple[dict[str, Checklist], Checklist | None]:
    """Per-case checklists and the corpus-wide one (a line without ``case_id``) from a JSONL file."""
    path = Path(path).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read checklists file ({exc.strerror})", path=str(path)) from None
    per_case: dict[str, Checklist] = {}
    shared: Checklist | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"not JSON ({exc.msg})", path=str(path), line=number) from None
        if not isinstance(record, dict):
            raise InputError("each line is a checklist object", path=str(path), line=number)
        if record.get("error"):
            continue  # a generation that failed: its case has no checklist from this file
        where = f"{path}:{number}"
        body = record.get("checklist", record)
        try:
            checklist = checklist_from(body, where, base=path.parent)
        except InputError as exc:
            raise InputError(str(exc).removeprefix(f"{where}: "), path=str(path), line=number,
                             field="items") from None
        case_id = record.get("case_id")
        if case_id is None:
            if shared is not None:
                raise InputError("a second checklist without case_id (only one may apply to every case)",
                                 path=str(path), line=number, field="case_id")
            shared = checklist
        else:
            if str(case_id) in per_case:
                raise InputError(f"case {case_id!r} has a second checklist", path=str(path), line=number,
                                 field="case_id")
            per_case[str(case_id)] = checklist
    return per_case, shared
