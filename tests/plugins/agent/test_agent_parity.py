"""Parity with the packages whose definitions the agent scorers follow, each run for real in a
venv of its own (``tests/reference_envs.py``) on the same conversations:

- ``agent/trajectory_match`` against LangChain's agentevals 0.0.9 ``create_trajectory_match_evaluator``,
  every trajectory mode x tool-args mode, and per-tool overrides;
- ``agent/tool_call_accuracy`` against Ragas 0.4.3's ``ToolCallAccuracy`` (both its classic
  metric and its ``metrics.collections`` one), with and without ``strict_order``.

The conversations: hand-written edge cases (empty trajectories, repeated calls, nested arguments
in another key order, 1 against 1.0 and true, parallel calls, a greedy pairing that misses a full
one) and seeded random ones over a few tools and argument values chosen to collide.
"""

from __future__ import annotations

import itertools
import json
import random

from evalyard.cases import case_from_record
from evalyard_agent.tool_call_accuracy import ToolCallAccuracy
from evalyard_agent.trajectory_match import TrajectoryMatch

MODES = ("strict", "unordered", "subset", "superset")
ARGS_MODES = ("exact", "ignore", "subset", "superset")
OVERRIDES = ({"search": "ignore"}, {"lookup": ["q", "f.a"]}, {"book": []}, {"search": "superset", "book": "subset"})


def conversation(*turns):
    """Messages from turns: a list of (name, arguments) is one assistant message of tool calls,
    each answered by a tool message; text is a user message."""
    messages, ids = [{"role": "system", "content": "Use the tools."}], itertools.count(1)
    for turn in turns:
        if isinstance(turn, str):
            messages.append({"role": "user", "content": turn})
            continue
        calls = [{"id": f"c{next(ids)}", "type": "function",
                  "function": {"name": name, "arguments": json.dumps(arguments)}} for name, arguments in turn]
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls]
    messages.append({"role": "assistant", "content": "Done."})
    return messages


def expected(*calls):
    return [{"name": name, "arguments": arguments} for name, arguments in calls]


EDGE_CASES = [
    ("both empty", conversation("hi"), []),
    ("none made", conversation("find x"), expected(("search", {"q": "x"}))),
    ("none expected", conversation("hi", [("search", {"q": "x"})]), []),
    ("same call", conversation("find x", [("search", {"q": "x"})]), expected(("search", {"q": "x"}))),
    ("no arguments", conversation("go", [("book", {})]), expected(("book", {}))),
    ("arguments where none expected", conversation("go", [("book", {"n": 1})]), expected(("book", {}))),
    ("other order", conversation("both", [("search", {"q": "x"})], [("lookup", {"q": "y"})]),
     expected(("lookup", {"q": "y"}), ("search", {"q": "x"}))),
    ("repeated made", conversation("x", [("search", {"q": "x"})], [("search", {"q": "x"})]),
     expected(("search", {"q": "x"}))),
    ("repeated expected", conversation("x", [("search", {"q": "x"})]),
     expected(("search", {"q": "x"}), ("search", {"q": "x"}))),
    ("nested, other key order", conversation("n", [("lookup", {"f": {"a": 1, "b": 2}})]),
     expected(("lookup", {"f": {"b": 2, "a": 1}}))),
    ("nested lists", conversation("n", [("lookup", {"f": {"a": [1, {"z": None}]}, "tags": ["a", "b"]})]),
     expected(("lookup", {"f": {"a": [1, {"z": None}]}, "tags": ["a", "b"]}))),
    ("list order", conversation("t", [("search", {"tags": ["a", "b"]})]), expected(("search", {"tags": ["b", "a"]}))),
    ("1 against 1.0", conversation("n", [("book", {"n": 1})]), expected(("book", {"n": 1.0}))),
    ("true against 1", conversation("n", [("book", {"n": True})]), expected(("book", {"n": 1}))),
    ("'1' against 1", conversation("n", [("book", {"n": "1"})]), expected(("book", {"n": 1}))),
    ("null against missing", conversation("n", [("book", {"n": None})]), expected(("book", {}))),
    ("extra argument", conversation("q", [("search", {"q": "x", "n": 2})]), expected(("search", {"q": "x"}))),
    ("missing argument", conversation("q", [("search", {"q": "x"})]), expected(("search", {"q": "x", "n": 2}))),
    ("parallel calls", conversation("p", [("search", {"q": "x"}), ("lookup", {"q": "y"})]),
     expected(("lookup", {"q": "y"}), ("search", {"q": "x"}))),
    ("greedy pairing misses", conversation("g", [("search", {"q": "x", "n": 1})], [("search", {"q": "x"})]),
     expected(("search", {"q": "x"}), ("search", {"q": "x", "n": 1}))),
    ("greedy pairing misses, reversed", conversation("g", [("search", {"q": "x"})], [("search", {"q": "x", "n": 1})]),
     expected(("search", {"q": "x", "n": 1}), ("search", {"q": "x"}))),
    ("other tool", conversation("o", [("lookup", {"q": "x"})]), expected(("search", {"q": "x"}))),
    ("override keys, nested", conversation("k", [("lookup", {"q": "x", "f": {"a": 1, "b": 9}, "n": 3})]),
     expected(("lookup", {"q": "x", "f": {"a": 1}}))),
]

NAMES = ("search", "lookup", "book")
VALUES = {"q": ["x", "y"], "n": [1, 1.0, "1", True, None], "f": [{"a": 1, "b": 2}, {"b": 2, "a": 1}, {"a": [1, 2]}],
          "tags": [["a", "b"], ["b", "a"]]}


def random_call(rng):
    keys = rng.sample(sorted(VALUES), rng.randint(0, 2))
    return rng.choice(NAMES), {k: rng.choice(VALUES[k]) for k in keys}


def random_case(rng):
    made = [random_call(rng) for _ in range(rng.randint(0, 4))]
    reference = list(made)
    for _ in range(rng.randint(0, 2)):  # near misses: reorder, drop, repeat, change, add
        change = rng.choice(("shuffle", "drop", "repeat", "change", "add"))
        if change == "shuffle":
            rng.shuffle(reference)
        elif change == "drop" and reference:
            reference.pop(rng.randrange(len(reference)))
        elif change == "repeat" and reference:
            reference.append(rng.choice(reference))
        elif change == "change" and reference:
            reference[rng.randrange(len(reference))] = random_call(rng)
        else:
            reference.insert(rng.randint(0, len(reference)), random_call(rng))
    turns, rest = ["start"], list(made)
    while rest:  # one or two calls per assistant message, a user turn now and then
        size = rng.randint(1, 2)
        turns.append(rest[:size])
        rest = rest[size:]
        if rng.random() < 0.3:
            turns.append("and then?")
    return conversation(*turns), expected(*reference)


def all_cases():
    rng = random.Random(42)
    cases = [(name, messages, reference) for name, messages, reference in EDGE_CASES]
    cases += [(f"random {n}", *random_case(rng)) for n in range(150)]
    return cases


def evalyard_case(n, messages, reference):
    record = {"id": str(n), "messages": messages, "expected_tool_calls": reference}
    return case_from_record(record, path="parity", line=n + 1, index=n, field_map={})


AGENTEVALS = r"""
import json, sys
from agentevals.trajectory.match import create_trajectory_match_evaluator

data = json.load(sys.stdin)
evaluators = {}
out = []
for job in data["jobs"]:
    messages, reference = data["cases"][job["case"]]
    if job["mode"] == "strict":
        # one call per assistant message on both sides: agentevals' strict mode compares message
        # lists, and a reference of calls has no messages of its own
        outputs = [{"role": "assistant", "content": "", "tool_calls": [call]}
                   for m in messages if m["role"] == "assistant" for call in m.get("tool_calls") or []]
        wanted = [{"role": "assistant", "content": "", "tool_calls": [call]} for call in reference]
    else:
        outputs = messages
        wanted = [{"role": "assistant", "content": "", "tool_calls": reference}] if reference else []
    key = (job["mode"], job["tool_args"], json.dumps(job["overrides"]))
    if key not in evaluators:
        evaluators[key] = create_trajectory_match_evaluator(
            trajectory_match_mode=job["mode"], tool_args_match_mode=job["tool_args"],
            tool_args_match_overrides=job["overrides"] or None)
    out.append(evaluators[key](outputs=outputs, reference_outputs=wanted)["score"])
print(json.dumps(out))
"""


def openai_calls(reference):
    return [{"id": f"r{k}", "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
            for k, c in enumerate(reference)]


def test_trajectory_match_equals_agentevals_0_0_9(agentevals_python):
    from reference_envs import run_reference

    cases = all_cases()
    jobs = [{"mode": m, "tool_args": a, "overrides": {}} for m in MODES for a in ARGS_MODES]
    jobs += [{"mode": m, "tool_args": "exact", "overrides": o} for m in MODES for o in OVERRIDES]
    runs = [dict(job, case=n) for job in jobs for n in range(len(cases))]
    theirs = run_reference(agentevals_python, AGENTEVALS, {
        "cases": [(messages, openai_calls(reference)) for _, messages, reference in cases], "jobs": runs})
    ours_cases = [evalyard_case(n, messages, reference) for n, (_, messages, reference) in enumerate(cases)]
    scorers = {}
    differences = []
    for run, reference_score in zip(runs, theirs):
        key = (run["mode"], run["tool_args"], json.dumps(run["overrides"]))
        if key not in scorers:
            scorers[key] = TrajectoryMatch(mode=run["mode"], tool_args=run["tool_args"],
                                           tool_args_overrides=run["overrides"])
        score = scorers[key].score(ours_cases[run["case"]])
        if score.value != float(reference_score):
            differences.append((cases[run["case"]][0], key, score.value, reference_score))
    assert len(theirs) == len(runs) == 32 * len(cases)
    assert differences == []
    # the cases are not all alike: both verdicts occur in every trajectory mode
    for mode in MODES:
        verdicts = {v for run, v in zip(runs, theirs) if run["mode"] == mode}
        assert verdicts == {True, False}, mode


RAGAS = r"""
import asyncio, json, sys, warnings
warnings.simplefilter("ignore")
from ragas.dataset_schema import MultiTurnSample
from ragas.messages import AIMessage, HumanMessage, ToolCall, ToolMessage
from ragas.metrics import ToolCallAccuracy
from ragas.metrics.collections import ToolCallAccuracy as CollectionsToolCallAccuracy


def ragas_messages(messages):
    out = []
    for m in messages:
        content = m.get("content") or ""
        if isinstance(content, list):
            content = "\n".join(part.get("text", "") for part in content)
        if m["role"] == "user":
            out.append(HumanMessage(content=content))
        elif m["role"] == "assistant":
            calls = [ToolCall(name=c["function"]["name"], args=json.loads(c["function"]["arguments"]))
                     for c in m.get("tool_calls") or []]
            out.append(AIMessage(content=content, tool_calls=calls or None))
        elif m["role"] == "tool":
            out.append(ToolMessage(content=content))
    return out


async def main(data):
    out = []
    for messages, reference in data["cases"]:
        user_input = ragas_messages(messages)
        reference_calls = [ToolCall(name=c["name"], args=c["arguments"]) for c in reference]
        row = []
        for strict in (True, False):
            classic = await ToolCallAccuracy(strict_order=strict).multi_turn_ascore(
                MultiTurnSample(user_input=user_input, reference_tool_calls=reference_calls))
            modern = await CollectionsToolCallAccuracy(strict_order=strict).ascore(
                user_input=user_input, reference_tool_calls=reference_calls)
            row.append([classic, modern.value])
        out.append(row)
    return out

print(json.dumps(asyncio.run(main(json.load(sys.stdin)))))
"""


def test_tool_call_accuracy_equals_ragas_0_4_3(ragas_python, monkeypatch):
    from reference_envs import run_reference

    monkeypatch.setenv("RAGAS_DO_NOT_TRACK", "true")  # no usage ping from the reference run
    cases = all_cases()
    theirs = run_reference(ragas_python, RAGAS, {"cases": [(m, r) for _, m, r in cases]})
    assert len(theirs) == len(cases)
    scorers = {strict: ToolCallAccuracy(strict_order=strict) for strict in (True, False)}
    differences = []
    for n, ((name, messages, reference), row) in enumerate(zip(cases, theirs)):
        case = evalyard_case(n, messages, reference)
        for strict, (classic, modern) in zip((True, False), row):
            assert classic == modern, name  # Ragas' two implementations agree with each other
            value = scorers[strict].score(case).value
            if value != classic:  # exactly: the same sums in the same order
                differences.append((name, strict, value, classic))
    assert differences == []
    values = {v for row in theirs for pair in row for v in pair}
    assert {0.0, 1.0} < values and any(0 < v < 1 for v in values)  # partial credit occurs too
