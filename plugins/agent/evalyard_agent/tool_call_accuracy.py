"""``agent/tool_call_accuracy``: Ragas 0.4.3's ``ToolCallAccuracy``, value for value
(tests/plugins/agent/test_agent_parity.py compares it with the real package).

Ragas' definition, kept as it is:

- both lists empty: 1.0; no call made, or none expected while some were made: 0.0;
- with ``strict_order: false`` both lists are first sorted by (name, then each argument's name
  and value as text, names in order), so the order the calls were made in stops counting;
- the sequences of names must be equal (sorted ones without strict order), else 0.0;
- otherwise the calls are paired by position, and each pair with the same name scores the share
  of the expected arguments the call has with an equal value, compared as Python's ``str()`` of
  each (so ``1`` and ``1.0`` differ, ``true`` and ``"True"`` do not, and a nested object's key
  order counts); no expected arguments scores 1.0 when the call has none either, else 0.0;
- the sum is divided by the number of expected calls. (Ragas also multiplies by a coverage
  penalty when fewer calls were made than expected, but the names then differ, so that score is
  already 0.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evalyard import Case, Score, Scorer

from .calls import Call, expected_calls, made_calls


def argument_score(made: dict[str, Any], expected: dict[str, Any]) -> float:
    if not expected:
        return 0.0 if made else 1.0
    same = sum(1 for key, value in expected.items() if key in made and str(made[key]) == str(value))
    return same / len(expected)


def order_key(call: Call) -> tuple[str, ...]:
    key = [call.name]
    for name in sorted(call.arguments):
        key += [name, str(call.arguments[name])]
    return tuple(key)


def tool_call_accuracy(made: list[Call], expected: list[Call], strict_order: bool = True) -> tuple[float, dict]:
    """The score and what it was made of."""
    if not made or not expected:
        return (1.0 if not made and not expected else 0.0), {"made": len(made), "expected": len(expected)}
    if not strict_order:
        made, expected = sorted(made, key=order_key), sorted(expected, key=order_key)
    aligned = [c.name for c in made] == [c.name for c in expected]
    per_call = [argument_score(m.arguments, e.arguments) if m.name == e.name else 0.0
                for m, e in zip(made, expected)]
    # Aligned names mean equal lengths, so Ragas' penalty for fewer calls than expected never applies.
    value = sum(per_call) / len(expected) if aligned else 0.0
    return value, {"aligned": aligned, "argument_scores": per_call}


class ToolCallAccuracy(Scorer):
    name = "tool_call_accuracy"
    description = ("Ragas 0.4.3's ToolCallAccuracy: 0 unless the tool names line up (in order, or sorted "
                   "without strict_order), else the mean share of expected arguments matched per call.")
    requires = ("messages", "expected_tool_calls")

    @dataclass
    class Config:
        strict_order: bool = field(default=True, metadata={"help": "the calls must come in the expected order "
                                                                   "(Ragas' strict_order)"})

    def score(self, case: Case) -> Score:
        value, details = tool_call_accuracy(made_calls(case), expected_calls(case), self.config.strict_order)
        return Score(value=value, details=details)
