"""``agent/trajectory_match``: the assistant's tool calls against the reference trajectory, with
the match modes of LangChain's agentevals 0.0.9 (``create_trajectory_match_evaluator``), so a
score here is the score agentevals gives (tests/plugins/agent/test_agent_parity.py).

Its definitions, kept as they are (README: where they differ from ``agent/tool_calls``):

- ``mode``: ``strict`` (the same calls in the same order), ``unordered`` (each side covers the
  other), ``superset`` (the calls made cover the expected ones), ``subset`` (the expected calls
  cover the ones made). "Covers" is agentevals' greedy pass: each wanted call takes the first
  unused call of the same name whose arguments match, and is never moved again.
- ``tool_args``: ``exact`` (Python equality of the decoded arguments: ``1 == 1.0 == true``),
  ``ignore``, ``subset`` (the first side's arguments are among the second's) and ``superset`` (the
  other way round), where the first side is the call being covered's partner: the call made in
  ``strict`` and ``superset``, the expected call in ``subset``, and each in turn in ``unordered``.
- ``tool_args_overrides``: tool name -> a mode for that tool, or a list of argument keys
  (``a.b`` for nested ones) that must be equal, all others ignored.

agentevals compares whole message lists in ``strict`` mode (roles, and each message's calls
unordered within it); the reference here is a list of calls, so ``strict`` compares the sequence
of calls, as agentevals does on both trajectories written one call per assistant message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from evalyard import Case, Score, Scorer

from .calls import Call, expected_calls, made_calls

ARGS_MODES = ("exact", "ignore", "subset", "superset")
Matcher = Callable[[dict[str, Any], dict[str, Any]], bool]


def _contained(small: dict[str, Any], large: dict[str, Any]) -> bool:
    return all(key in large and large[key] == value for key, value in small.items())


MATCHERS: dict[str, Matcher] = {
    "exact": lambda first, second: first == second,
    "ignore": lambda first, second: True,
    "subset": _contained,
    "superset": lambda first, second: _contained(second, first),
}


def _nested(arguments: Any, path: str) -> Any:
    """The value at ``a.b.c``, or None when any step is missing (so missing equals null there)."""
    for part in path.split("."):
        if not isinstance(arguments, dict):
            return None
        arguments = arguments.get(part)
        if arguments is None:
            return None
    return arguments


def _keys_matcher(paths: list[str]) -> Matcher:
    return lambda first, second: all(_nested(first, p) == _nested(second, p) for p in paths)


def covers(calls: list[Call], wanted: list[Call], matcher_for: Callable[[str], Matcher]) -> bool:
    """Whether every call of ``wanted`` finds a call of its own in ``calls``: the first unused one of
    its name whose arguments match (``matcher(that call's, the wanted call's)``), as agentevals pairs
    them; a pairing once made is kept even when moving it would let a later call match."""
    used: set[int] = set()
    for want in wanted:
        matcher = matcher_for(want.name)
        found = next((i for i, call in enumerate(calls)
                      if i not in used and call.name == want.name and matcher(call.arguments, want.arguments)), None)
        if found is None:
            return False
        used.add(found)
    return True


def trajectory_matches(made: list[Call], expected: list[Call], mode: str, matcher_for: Callable[[str], Matcher]) -> bool:
    if mode == "strict":
        return len(made) == len(expected) and all(
            m.name == e.name and matcher_for(m.name)(m.arguments, e.arguments) for m, e in zip(made, expected))
    if mode == "superset":
        return covers(made, expected, matcher_for)
    if mode == "subset":
        return covers(expected, made, matcher_for)
    return covers(made, expected, matcher_for) and covers(expected, made, matcher_for)


class TrajectoryMatch(Scorer):
    name = "trajectory_match"
    description = ("1.0 when the assistant's tool calls match expected_tool_calls in agentevals 0.0.9's "
                   "trajectory match mode (strict, unordered, subset, superset) and tool-args mode.")
    requires = ("messages", "expected_tool_calls")
    labels = ("fail", "pass")
    threshold = 1.0

    @dataclass
    class Config:
        mode: Literal["strict", "unordered", "subset", "superset"] = field(
            default="strict", metadata={"help": "agentevals' trajectory_match_mode"})
        tool_args: Literal["exact", "ignore", "subset", "superset"] = field(
            default="exact", metadata={"help": "agentevals' tool_args_match_mode"})
        tool_args_overrides: dict[str, Any] = field(
            default_factory=dict,
            metadata={"help": "tool name -> a tool_args mode, or a list of argument keys (a.b: nested) to compare"})

        def __post_init__(self) -> None:
            for tool, override in self.tool_args_overrides.items():
                if not (override in ARGS_MODES or (isinstance(override, list)
                                                   and all(isinstance(k, str) for k in override))):
                    raise ValueError(f"tool_args_overrides.{tool}: expected one of {', '.join(ARGS_MODES)} "
                                     "or a list of argument keys")

    def matcher_for(self, tool: str) -> Matcher:
        # agentevals skips an override that is empty (a falsy value), and so do we
        override = self.config.tool_args_overrides.get(tool)
        if isinstance(override, list) and override:
            return _keys_matcher(override)
        return MATCHERS[override or self.config.tool_args]

    def score(self, case: Case) -> Score:
        made, expected = made_calls(case), expected_calls(case)
        matched = trajectory_matches(made, expected, self.config.mode, self.matcher_for)
        return Score(value=1.0 if matched else 0.0, label="pass" if matched else "fail",
                     details={"mode": self.config.mode, "calls": [c.describe() for c in made],
                              "expected": [c.describe() for c in expected]})
