"""The tool calls of a case as the scorers compare them: the calls the assistant made (from
``messages``) and the calls expected of it (``expected_tool_calls``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from evalyard import Case


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        return f"{self.name}({json.dumps(self.arguments, ensure_ascii=False, sort_keys=True)})"


def made_calls(case: Case) -> list[Call]:
    """Every tool call of the assistant's messages, in order (a message's calls in the order listed).

    The arguments were checked to be JSON objects when the case was read; a case built in Python
    skips that check, so a bad one fails here, as that case's error."""
    calls = []
    for message in case.messages or ():
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or ():
            function = call["function"]
            text = function["arguments"]
            arguments = json.loads(text)
            if not isinstance(arguments, dict):
                raise ValueError(f"tool call {call.get('id')!r}: arguments are not a JSON object: {text:.60}")
            calls.append(Call(function["name"], arguments))
    return calls


def expected_calls(case: Case) -> list[Call]:
    return [Call(call["name"], dict(call.get("arguments") or {})) for call in case.expected_tool_calls or ()]


def assistant_turns(case: Case) -> int:
    return sum(1 for message in case.messages or () if message.get("role") == "assistant")


def json_equal(a: Any, b: Any) -> bool:
    """Equal as JSON values: numbers by value (1 == 1.0), but true is not 1 (Python's ``==`` says
    it is), and objects whatever their key order."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def matching(left: Sequence[Call], right: Sequence[Call], match: Callable[[Call, Call], bool]) -> list[tuple[int, int]]:
    """A largest set of (i, j) pairs, each call of ``left`` and of ``right`` in one pair at most,
    with ``match(left[i], right[j])``: augmenting paths (Kuhn), so a repeated call or a loose
    argument rule never makes a first-come pairing miss a full match. Trajectories are short."""
    partner: dict[int, int] = {}  # right index -> left index

    def place(i: int, seen: set[int]) -> bool:
        for j in range(len(right)):
            if j in seen or not match(left[i], right[j]):
                continue
            seen.add(j)
            if j not in partner or place(partner[j], seen):
                partner[j] = i
                return True
        return False

    for i in range(len(left)):
        place(i, set())
    return sorted((i, j) for j, i in partner.items())
