"""``agent/goal_success`` against Ragas 0.4.3's ``AgentGoalAccuracyWithReference`` and
``AgentGoalAccuracyWithoutReference``, the real package in a venv of its own
(``tests/reference_envs.py``), with a scripted judge: the fake OpenAI server answers both from
one rules file over HTTP (evalyard through litellm's ``openai/`` provider and the whole model
layer, Ragas through LangChain's ``ChatOpenAI``), so both get the same model answers and any
difference is in what each does with them.

The rules key on tokens the conversations carry: the goal step of conversation k (its text holds
``CONV-k``) answers ``GOAL-k`` / ``END-k``; the compare step answers a verdict chosen per case,
one verdict when the outcome wanted is the reference (``REF-k``) and another when it is the
inferred goal, so the two Ragas metrics differ on some cases. Some verdicts are unreadable
(neither "0" nor "1"): Ragas raises, evalyard records an error; both give no value.
"""

from __future__ import annotations

import json
import random

import pytest
import yaml
from click.testing import CliRunner

from evalyard.cli import cli

pytestmark = pytest.mark.slow


def call(cid, name, **arguments):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def shapes(k):
    """Conversation shapes, each marked with ``CONV-k`` in its first user message."""
    tag = f"CONV-{k}"
    return [
        ("one exchange", [{"role": "user", "content": f"{tag} what is the capital of Norway?"},
                          {"role": "assistant", "content": "Oslo."}]),
        ("user only", [{"role": "user", "content": f"{tag} book me a table"}]),
        ("tool-only turns", [{"role": "user", "content": f"{tag} cancel order 7"},
                             {"role": "assistant", "content": None, "tool_calls": [call("a", "lookup", order=7)]},
                             {"role": "tool", "tool_call_id": "a", "content": "order 7: open"},
                             {"role": "assistant", "content": None, "tool_calls": [call("b", "cancel", order=7)]},
                             {"role": "tool", "tool_call_id": "b", "content": "cancelled"}]),
        ("multi-turn with tools", [
            {"role": "system", "content": "You are a travel agent."},
            {"role": "user", "content": f"{tag} find me a flight to Rome on Friday"},
            {"role": "assistant", "content": "Searching.", "tool_calls": [call("s", "search", to="Rome", day="Fri")]},
            {"role": "tool", "tool_call_id": "s", "content": "AZ 611 at 9:00, FR 22 at 14:00"},
            {"role": "assistant", "content": "AZ 611 at 9:00 or FR 22 at 14:00?"},
            {"role": "user", "content": "the afternoon one, two seats"},
            {"role": "assistant", "content": None,
             "tool_calls": [call("b", "book", flight="FR 22", seats=2, extras={"bags": [1, 2]})]},
            {"role": "tool", "tool_call_id": "b", "content": "booked: ref QX7"},
            {"role": "assistant", "content": "Booked FR 22, two seats, reference QX7."},
            {"role": "user", "content": "thanks"}]),
        ("parallel calls", [{"role": "user", "content": f"{tag} weather in Oslo and Bergen"},
                            {"role": "assistant", "content": "", "tool_calls": [call("x", "weather", city="Oslo"),
                                                                                call("y", "weather", city="Bergen")]},
                            {"role": "tool", "tool_call_id": "x", "content": "rain"},
                            {"role": "tool", "tool_call_id": "y", "content": "sun"},
                            {"role": "assistant", "content": "Oslo: rain. Bergen: sun."}]),
        ("content parts", [{"role": "user", "content": [{"type": "text", "text": f"{tag} summarise this"}]},
                           {"role": "assistant", "content": [{"type": "text", "text": "A summary."}]}]),
    ]


def all_cases():
    rng = random.Random(7)
    cases, k = [], 0
    for _ in range(4):  # each shape four times, with other verdicts
        for name, _ in shapes(0):
            k += 1
            messages = dict(shapes(k))[name]
            with_ref = rng.choice(["0", "1", "0", "1", "yes"])  # "yes": an unreadable verdict
            without_ref = rng.choice(["0", "1", "1", "0"])
            cases.append({"k": k, "shape": name, "messages": messages, "reference": f"REF-{k} the task is done",
                          "verdicts": (with_ref, without_ref)})
    return cases


def rules(cases):
    out = []
    for c in cases:  # the compare steps first: their prompts hold END-k, never CONV-k
        k = c["k"]
        with_ref, without_ref = c["verdicts"]
        out.append({"contains": [f"END-{k} ", f"REF-{k} "],
                    "content": {"reason": f"compared for case {k}", "verdict": with_ref}})
        out.append({"contains": f"END-{k} ", "content": {"reason": f"goal compared for case {k}",
                                                          "verdict": without_ref}})
    for c in cases:
        k = c["k"]
        out.append({"regex": rf"CONV-{k}\b", "content": {"user_goal": f"GOAL-{k} what the user asked",
                                                          "end_state": f"END-{k} where it ended"}})
    # Ragas asks about an empty conversation too (evalyard refuses one before the run)
    out.append({"regex": r'"workflow": ""', "content": {"user_goal": "GOAL-0 nothing", "end_state": "END-0 nothing"}})
    out.append({"contains": "END-0 ", "content": {"reason": "nothing happened", "verdict": "0"}})
    return out


RAGAS = r"""
import asyncio, json, sys, warnings
warnings.simplefilter("ignore")
from langchain_openai import ChatOpenAI
from ragas.dataset_schema import MultiTurnSample
from ragas.llms import LangchainLLMWrapper
from ragas.messages import AIMessage, HumanMessage, ToolCall, ToolMessage
from ragas.metrics import AgentGoalAccuracyWithoutReference, AgentGoalAccuracyWithReference


def text(content):
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content)
    return content or ""


def ragas_messages(messages):
    out = []
    for m in messages:
        if m["role"] == "user":
            out.append(HumanMessage(content=text(m.get("content"))))
        elif m["role"] == "assistant":
            calls = [ToolCall(name=c["function"]["name"], args=json.loads(c["function"]["arguments"]))
                     for c in m.get("tool_calls") or []]
            out.append(AIMessage(content=text(m.get("content")), tool_calls=calls or None))
        elif m["role"] == "tool":
            out.append(ToolMessage(content=text(m.get("content"))))
    return out


async def main(data):
    llm = LangchainLLMWrapper(ChatOpenAI(model="fake-judge", base_url=data["base_url"], api_key="none",
                                         max_retries=0))
    metrics = {"with": AgentGoalAccuracyWithReference(llm=llm), "without": AgentGoalAccuracyWithoutReference(llm=llm)}
    out = []
    for messages, reference in data["cases"]:
        row = {}
        for key, metric in metrics.items():
            sample = MultiTurnSample(user_input=ragas_messages(messages), reference=reference)
            try:
                row[key] = await metric.multi_turn_ascore(sample)
            except Exception as exc:  # an unreadable answer: Ragas raises
                row[key] = None
                row[key + "_error"] = type(exc).__name__
        out.append(row)
    return out

print(json.dumps(asyncio.run(main(json.load(sys.stdin)))))
"""


def evalyard_values(app, tmp_path, cases, server, reference):
    data = tmp_path / f"goal-{reference}.jsonl"
    data.write_text("".join(json.dumps({"id": str(c["k"]), "messages": c["messages"], "reference": c["reference"]})
                            + "\n" for c in cases))
    suite = {"name": f"goal-parity-{reference}", "data": str(data),
             "scorers": [{"name": "agent/goal_success", "config": {"reference": reference}}],
             "models": {"openai/fake-judge": {"api_base": server.base_url, "supports_schema": True}}}
    path = tmp_path / f"goal-{reference}.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    run = CliRunner().invoke(cli, ["run", str(path), "--judge-model", "openai/fake-judge", "--json"],
                             obj=app, catch_exceptions=False)
    assert run.exit_code in (0, 1), run.output
    run_id = json.loads(run.stdout)["run_id"]
    exported = CliRunner().invoke(cli, ["runs", "export", run_id], obj=app, catch_exceptions=False)
    rows = {r["case_id"]: r for r in map(json.loads, exported.stdout.splitlines())}
    return {int(k): (r["value"], r["error"]) for k, r in rows.items()}


def test_goal_success_equals_ragas_agent_goal_accuracy(app, tmp_path, ragas_python, monkeypatch):
    from reference_envs import run_reference
    from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig

    monkeypatch.setenv("RAGAS_DO_NOT_TRACK", "true")
    cases = all_cases()
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump(rules(cases), sort_keys=False))
    with FakeOpenAIServer(FakeServerConfig(rules=str(rules_file))) as server:
        theirs = run_reference(ragas_python, RAGAS, {
            "base_url": server.base_url, "cases": [(c["messages"], c["reference"]) for c in cases] + [([], "REF-0")]})
        ours = {"with": evalyard_values(app, tmp_path, cases, server, "require"),
                "without": evalyard_values(app, tmp_path, cases, server, "ignore")}
    table, differences = {}, []
    for c, row in zip(cases, theirs):
        for n, mode in enumerate(("with", "without")):
            value, error = ours[mode][c["k"]]
            expected_verdict = c["verdicts"][n]
            if expected_verdict not in ("0", "1"):  # unreadable: Ragas raises, evalyard records an error
                assert row[mode] is None and row[mode + "_error"], row
                assert value is None and "verdict" in error, error
            elif value != row[mode] or value != float(expected_verdict):
                differences.append((c["k"], c["shape"], mode, value, row[mode]))
            equal = value == row[mode] or (value is None and row[mode] is None)
            cell = table.setdefault((c["shape"], mode), [0, 0])
            cell[0] += 1
            cell[1] += equal
    assert differences == []
    # the verdicts vary: both values occur in both modes, and the modes disagree somewhere
    for mode in ("with", "without"):
        assert {row[mode] for row in theirs[:-1]} >= {0.0, 1.0}
    assert any(row["with"] != row["without"] for row in theirs[:-1])
    # an empty conversation: Ragas judges an empty text, evalyard refuses the case (no messages)
    assert theirs[-1] == {"with": 0.0, "without": 0.0}
    print("\nshape | reference | cases | equal")
    for (shape, mode), (count, equal) in sorted(table.items()):
        print(f"{shape} | {mode} | {count} | {equal}")
