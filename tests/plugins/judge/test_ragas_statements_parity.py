"""``ragas/faithfulness``, ``ragas/context_recall``, ``ragas/factual_correctness`` and
``ragas/noise_sensitivity`` against Ragas 0.4.3's Faithfulness, LLMContextRecall,
FactualCorrectness and NoiseSensitivity, the real package in a venv of its own
(``tests/reference_envs.py``), with a scripted judge: the fake OpenAI server answers both from one
rules file over HTTP (evalyard through litellm and the whole model layer, Ragas through
LangChain's ``ChatOpenAI``), so any difference is in what each does with the same answers.

The prompts differ (our own wording), so the rules key on tokens the texts carry: case k's
question holds ``Q{k}Z``, its answer ``ANS{k}Z``, its reference ``REF{k}Z``, its passage j
``P{k}N{j}Z``; the judge's statements and claims carry tokens of their own (``AS{k}N{i}Z`` for the
answer's statements, ``RS`` the reference's, ``AC``/``RC`` the claims). A check (NLI) prompt is
recognised by the statements it lists and the context it holds, and its verdicts are drawn per
(statement, context text), so the same check gets the same verdicts whoever asks.

Calls are counted per metric and case on both sides (Ragas: an httpx hook on its client;
evalyard: the fake server's count over one run per metric, in a fresh database), and evalyard
must never make more.
"""

from __future__ import annotations

import json
import random

import pytest
import yaml
from click.testing import CliRunner

from evalyard.cli import cli

pytestmark = pytest.mark.slow


GARBAGE = "I am sorry, I cannot do that."
#: label -> (our scorer, its config, Ragas' class, its config)
METRICS = {
    "faithfulness": ("ragas/faithfulness", {}, "Faithfulness", {}),
    "context_recall": ("ragas/context_recall", {}, "LLMContextRecall", {}),
    "factual f1": ("ragas/factual_correctness", {}, "FactualCorrectness", {}),
    "factual precision": ("ragas/factual_correctness", {"mode": "precision"}, "FactualCorrectness",
                          {"mode": "precision"}),
    "factual recall": ("ragas/factual_correctness", {"mode": "recall"}, "FactualCorrectness", {"mode": "recall"}),
    "factual f0.5 high/high": ("ragas/factual_correctness", {"beta": 0.5, "atomicity": "high", "coverage": "high"},
                               "FactualCorrectness", {"beta": 0.5, "atomicity": "high", "coverage": "high"}),
    "noise relevant": ("ragas/noise_sensitivity", {}, "NoiseSensitivity", {}),
    "noise irrelevant": ("ragas/noise_sensitivity", {"mode": "irrelevant"}, "NoiseSensitivity",
                         {"mode": "irrelevant"}),
}
#: shape -> (passages, what is odd about it); each shape is made `REPEAT` times, with other verdicts
SHAPES = {
    "one passage": (1, None),
    "three passages": (3, None),
    "fifty passages": (50, None),
    "empty answer": (2, "empty answer"),
    "empty reference": (2, "empty reference"),
    "judge finds no statements": (2, "no answer statements"),
    "judge finds nothing in the reference": (2, "no reference statements"),
    "unparseable judge output": (2, "garbage"),
    "unreadable verdict": (2, "unreadable verdict"),
    "fewer verdicts than statements": (3, "fewer verdicts"),
    "one passage's verdicts miscounted": (3, "short passage"),
}
REPEAT = {"fifty passages": 1, "one passage": 5, "three passages": 5}


def tokens(prefix, k, n):
    return [f"{prefix}{k}N{i}Z {word}" for i, word in zip(range(1, n + 1), ("alpha", "beta", "gamma", "delta", "eps"))]


def make_case(k, shape, rng):
    passages, odd = SHAPES[shape]
    case = {"k": k, "shape": shape, "odd": odd, "question": f"Q{k}Z what do we know about topic {k}?",
            "answer": f"ANS{k}Z topic {k} is this and that.", "reference": f"REF{k}Z topic {k} is this, not that.",
            "passages": [f"P{k}N{j}Z text of passage {j} on topic {k}." for j in range(1, passages + 1)]}
    for key in ("AS", "RS", "AC", "RC"):
        case[key] = tokens(key, k, rng.randint(2, 5))
    case["recall"] = [rng.choice([0, 1, 1]) for _ in range(rng.randint(1, 4))]
    case["support"] = rng.choice([0.3, 0.5, 0.7])
    if odd == "empty answer":
        case["answer"], case["AS"], case["AC"] = "", [], []
    if odd == "empty reference":
        case["reference"], case["RS"], case["RC"], case["recall"] = "", [], [], []
    if odd == "no answer statements":
        case["AS"], case["AC"] = [], []
    if odd == "no reference statements":
        case["RS"], case["RC"], case["recall"] = [], [], []
    return case


def all_cases():
    rng = random.Random(11)
    cases, k = [], 0
    for shape in SHAPES:
        for _ in range(REPEAT.get(shape, 2)):
            k += 1
            cases.append(make_case(k, shape, rng))
    return cases


def empty_context_cases():
    rng = random.Random(5)
    cases = []
    for k in (901, 902):
        case = make_case(k, "one passage", rng)
        case.update(shape="empty contexts", passages=[])
        cases.append(case)
    return cases


def verdict(case, statement, context):
    return int(random.Random(f"{case['k']}|{statement}|{context}").random() < case["support"])


def check_rule(case, statements, context, marks, fault=None):
    """The rule answering the check of ``statements`` against ``context`` (marked by ``marks``)."""
    answers = [{"statement": s, "reason": "scripted", "verdict": verdict(case, s, context)} for s in statements]
    if fault == "fewer":
        answers = answers[:-1]
    if fault == "unreadable":
        answers[0]["verdict"] = "yes"
    return {"contains": [s.split()[0] for s in statements] + marks, "content": {"statements": answers}}


def check_rules(case):
    k, passages = case["k"], case["passages"]
    marks = [p.split()[0] for p in passages]
    odd = case["odd"]
    reference_mark = [f"REF{k}Z"] if case["reference"] else []
    answer_mark = [f"ANS{k}Z"] if case["answer"] else []
    rules = []
    if case["AS"]:
        joined_fault = {"fewer verdicts": "fewer", "unreadable verdict": "unreadable"}.get(odd)
        rules.append(check_rule(case, case["AS"], "\n".join(passages), marks, joined_fault))
        rules += [check_rule(case, case["AS"], p, [m], "unreadable" if odd == "unreadable verdict" else None)
                  for p, m in zip(passages, marks)]
        rules.append(check_rule(case, case["AS"], case["reference"], reference_mark))
    if case["RS"]:
        rules += [check_rule(case, case["RS"], p, [m], "fewer" if odd == "short passage" and j == 1 else None)
                  for j, (p, m) in enumerate(zip(passages, marks))]
    if case["AC"]:
        rules.append(check_rule(case, case["AC"], case["reference"], reference_mark,
                                "fewer" if odd == "fewer verdicts" else None))
    if case["RC"]:
        rules.append(check_rule(case, case["RC"], case["answer"], answer_mark))
    unique = {}
    for rule in rules:  # one passage: its check and the joined passages' are one prompt
        unique.setdefault(tuple(rule["contains"]), rule)
    # the most specific first: the joined passages' rule holds every passage's mark
    return sorted(unique.values(), key=lambda r: -len(r["contains"]))


def rules(cases):
    out = [{"contains": '"statements": []', "content": {"statements": []}}]  # Ragas checks empty lists too
    for case in cases:
        out += check_rules(case)
    for case in cases:
        k, q = case["k"], f"Q{case['k']}Z"
        garbage = case["odd"] == "garbage"
        classifications = {"classifications": [{"statement": f"sentence {n}", "reason": "scripted", "attributed": a}
                                               for n, a in enumerate(case["recall"])]}
        recall = GARBAGE if garbage else classifications
        if case["passages"] and case["reference"]:
            out.append({"contains": [q, f"REF{k}Z", case["passages"][0].split()[0]], "content": recall})
        # what Ragas alone asks (evalyard refuses these cases before any call)
        out.append({"contains": [q, '"context": ""'], "content": recall})
        out.append({"contains": [q, '"context": "P', '"answer": ""'], "content": {"classifications": []}})
        out.append({"contains": [q, '"answer": ""'], "content": {"statements": []}})
        out.append({"contains": [q, f"ANS{k}Z"], "content": GARBAGE if garbage else {"statements": case["AS"]}})
        out.append({"contains": [q, f"REF{k}Z"], "content": {"statements": case["RS"]}})
        out.append({"contains": f"ANS{k}Z", "content": {"claims": case["AC"]}})
        out.append({"contains": f"REF{k}Z", "content": {"claims": case["RC"]}})
    out.append({"contains": '"response": ""', "content": {"claims": []}})
    out.append({"regex": r"<data-(\w+)>\n\n</data-\1>", "content": {"claims": []}})  # evalyard: an empty text
    return out


RAGAS = r"""
import asyncio, json, math, sys, warnings
warnings.simplefilter("ignore")
import httpx
from langchain_openai import ChatOpenAI
from ragas.dataset_schema import SingleTurnSample
from ragas.llms import LangchainLLMWrapper
import ragas.metrics as metrics

CALLS = [0]


async def count(request):
    CALLS[0] += 1


async def main(data):
    client = httpx.AsyncClient(event_hooks={"request": [count]})
    llm = LangchainLLMWrapper(ChatOpenAI(model="fake-judge", base_url=data["base_url"], api_key="none",
                                         max_retries=0, http_async_client=client))
    out = {}
    for label, (cls, config) in data["metrics"].items():
        metric = getattr(metrics, cls)(llm=llm, **config)
        rows = []
        for case in data["cases"]:
            sample = SingleTurnSample(user_input=case["question"], response=case["answer"],
                                      reference=case["reference"], retrieved_contexts=case["passages"])
            before = CALLS[0]
            try:
                value = await metric.single_turn_ascore(sample)
                value, error = (None, "NaN") if math.isnan(value) else (float(value), None)
            except Exception as exc:
                value, error = None, type(exc).__name__
            rows.append({"value": value, "error": error, "calls": CALLS[0] - before})
        out[label] = rows
    return out

print(json.dumps(asyncio.run(main(json.load(sys.stdin)))))
"""


def data_file(tmp_path, name, cases):
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(json.dumps({"id": str(c["k"]), "input": c["question"], "candidate": c["answer"],
                                        "reference": c["reference"], "context": c["passages"]}) + "\n"
                            for c in cases))
    return path


def suite_file(tmp_path, name, data, server, scorers):
    suite = {"name": name, "data": str(data), "scorers": [{"name": s, "config": c} for s, c in scorers],
             "models": {"openai/fake-judge": {"api_base": server.base_url, "supports_schema": True}}}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path


def run(app, suite, db):
    done = CliRunner().invoke(cli, ["run", str(suite), "--judge-model", "openai/fake-judge", "--db", str(db), "--json"],
                              obj=app, catch_exceptions=False)
    return done


def exported(app, done, db):
    assert done.exit_code in (0, 1), done.output
    run_id = json.loads(done.stdout)["run_id"]
    out = CliRunner().invoke(cli, ["runs", "export", run_id, "--db", str(db)], obj=app, catch_exceptions=False)
    return [json.loads(line) for line in out.stdout.splitlines()]


def fresh_calls(row):
    usage = row.get("usage") or {}
    return usage.get("calls", 0) - usage.get("cache_hits", 0)


def test_statement_metrics_equal_ragas(app, tmp_path, ragas_python, monkeypatch):
    from reference_envs import run_reference
    from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig

    monkeypatch.setenv("RAGAS_DO_NOT_TRACK", "true")
    cases, empty = all_cases(), empty_context_cases()
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump(rules(cases + empty), sort_keys=False))
    data = data_file(tmp_path, "cases", cases)
    ours, our_calls = {}, {}
    with FakeOpenAIServer(FakeServerConfig(rules=str(rules_file))) as server:
        theirs = run_reference(ragas_python, RAGAS, {
            "base_url": server.base_url, "metrics": {label: (m[2], m[3]) for label, m in METRICS.items()},
            "cases": [{key: c[key] for key in ("question", "answer", "reference", "passages")} for c in cases + empty]})
        suites, dbs = {}, {}
        for n, (label, (scorer, config, _, _)) in enumerate(METRICS.items()):
            before = server.stats.requests
            suites[label] = suite_file(tmp_path, f"metric-{n}", data, server, [(scorer, config)])
            dbs[label] = tmp_path / f"metric-{n}.db"
            rows = exported(app, run(app, suites[label], dbs[label]), dbs[label])
            our_calls[label] = server.stats.requests - before
            ours[label] = {int(r["case_id"]): r for r in rows}
        # another mode of a metric asks what the first asked: the cache answers it all
        other_modes = {}
        for label, after in (("noise irrelevant", "noise relevant"), ("factual precision", "factual f1"),
                             ("factual recall", "factual f1")):
            before = server.stats.requests
            exported(app, run(app, suites[label], dbs[after]), dbs[after])
            other_modes[(label, after)] = server.stats.requests - before
        # every metric of a case in one run: the steps they share are asked once
        shared_db = tmp_path / "shared.db"
        shared = suite_file(tmp_path, "shared", data, server, [
            ("ragas/faithfulness", {}), ("ragas/noise_sensitivity", {}), ("ragas/context_recall", {}),
            ("ragas/factual_correctness", {})])
        before = server.stats.requests
        exported(app, run(app, shared, shared_db), shared_db)
        shared_calls = server.stats.requests - before
        before = server.stats.requests
        exported(app, run(app, shared, shared_db), shared_db)
        rerun_calls = server.stats.requests - before
        # a case without passages is refused before any call, naming the case and the field
        refused = {}
        for scorer in ("ragas/faithfulness", "ragas/context_recall", "ragas/noise_sensitivity"):
            before = server.stats.requests
            suite = suite_file(tmp_path, "empty-contexts", data_file(tmp_path, "empty", empty), server, [(scorer, {})])
            done = run(app, suite, tmp_path / "empty.db")
            refused[scorer] = (done.exit_code, done.output, server.stats.requests - before)

    table, differences = {}, []
    for label in METRICS:
        for c, row in zip(cases, theirs[label]):
            mine = ours[label][c["k"]]
            equal = mine["value"] == row["value"] and (mine["value"] is None) == (row["value"] is None)
            if mine["value"] is None:
                assert mine["error"], mine
            if not equal:
                differences.append((label, c["shape"], c["k"], mine["value"], mine["error"], row))
            cell = table.setdefault((label, c["shape"]), [0, 0])
            cell[0] += 1
            cell[1] += equal
    print("\nmetric | shape | cases | equal")
    for (label, shape), (count, equal) in table.items():
        print(f"{label} | {shape} | {count} | {equal}")
    assert differences == []

    # the verdicts vary: no constant passes
    for label in METRICS:
        values = {row["value"] for row in theirs[label][:len(cases)] if row["value"] is not None}
        assert len(values) >= 3, (label, values)
        assert any(row["value"] is None for row in theirs[label][:len(cases)]) or label.startswith("factual"), label

    # calls: never more than Ragas, per metric and per case
    print("\nmetric | cases | ragas calls (per case) | evalyard calls (per case)")
    for label in METRICS:
        ragas_calls = sum(row["calls"] for row in theirs[label][:len(cases)])
        print(f"{label} | {len(cases)} | {ragas_calls} ({ragas_calls / len(cases):.2f}) | {our_calls[label]} "
              f"({our_calls[label] / len(cases):.2f})")
        assert our_calls[label] <= ragas_calls, label
        for c, row in zip(cases, theirs[label]):
            assert fresh_calls(ours[label][c["k"]]) <= row["calls"], (label, c["shape"])
    alone = sum(our_calls[label] for label in ("faithfulness", "noise relevant", "context_recall", "factual f1"))
    print(f"faithfulness + noise + recall + factual in one run: {shared_calls} calls (one run each: {alone}); "
          f"cached rerun: {rerun_calls}")
    assert shared_calls < alone
    assert rerun_calls == 0
    for (label, after), calls in other_modes.items():
        print(f"{label} after {after}, same database: {calls} calls")
        assert calls == 0

    # empty contexts: Ragas judges an empty text (noise sensitivity raises); evalyard refuses the run
    for scorer, (code, output, calls) in refused.items():
        assert code == 2 and calls == 0, (scorer, output)
        assert "case '901' has no context" in output, output
    print("\nempty contexts | ragas | evalyard")
    for label in ("faithfulness", "context_recall", "noise relevant"):
        print(f"{label} | {[r['value'] if r['error'] is None else r['error'] for r in theirs[label][len(cases):]]} "
              "| refused before any call")
