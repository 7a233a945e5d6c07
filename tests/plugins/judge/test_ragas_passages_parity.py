"""``ragas/context_precision``, ``ragas/context_precision_without_reference`` and
``ragas/context_entity_recall`` against Ragas 0.4.3's LLMContextPrecisionWithReference,
LLMContextPrecisionWithoutReference and ContextEntityRecall (the real package in its own venv),
both fed by one fake OpenAI server over HTTP (evalyard through litellm and the model layer,
Ragas through LangChain's ChatOpenAI).

Every text of case k carries ``case-k``; passage i carries ``pass-k-i``, the reference
``REF-k``, the answer ``ANS-k``. A rule per (passage, answer) gives the verdict, so the verdicts
depend on the passage and on which answer it is judged against, and the average precision on
the order: Ragas is handed the passages in evalyard's ranking order (trec_eval's for a scored
``retrieved``). Entities: one rule for the reference's text, one for the passages'.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter

import pytest
import yaml
from click.testing import CliRunner

from evalyard.cli import cli

pytestmark = pytest.mark.slow

#: a phrase of Ragas' prompt | a phrase of ours, per step
PRECISION = ("verify if the context was useful", "Decide whether the passage was useful")
ENTITIES = ("extract unique entities", "List the entities the text below names")
METRICS = ("context_precision", "context_precision_without_reference", "context_entity_recall")
VERDICTS = [1, 0, 1, 0, "1", "0", True, False, 2, "1.0", " 1 "]
ENTITY_POOL = ["Oslo", "Norway", "Bergen", "1814", "Harald V", "Storting", "fjord"]


def passage(k, i, text="a fact about Norway"):
    return f"case-{k} pass-{k}-{i} {text}"


def shapes(k):
    base = {"input": f"case-{k} What is the capital of Norway?", "candidate": f"case-{k} ANS-{k} Oslo, I think.",
            "reference": f"case-{k} REF-{k} Oslo is the capital of Norway."}
    ranked = [{"id": "b", "text": passage(k, 0), "score": 0.2}, {"id": "a", "text": passage(k, 1), "score": 0.9},
              {"id": "c", "text": passage(k, 2), "score": 0.2}, {"id": "d", "text": passage(k, 3), "score": 0.5}]
    return [
        ("one passage", {**base, "context": [passage(k, 0)]}),
        ("four passages", {**base, "context": [passage(k, i) for i in range(4)]}),
        ("fifty passages", {**base, "context": [passage(k, i, f"fact {i}") for i in range(50)]}),
        ("ranked by score", {**base, "retrieved": ranked}),  # no context: the retrieval's texts, ranked
        ("answer equals reference", {**base, "candidate": base["reference"],
                                     "context": [passage(k, i) for i in range(3)]}),
        ("empty answer", {**base, "candidate": "", "context": [passage(k, i) for i in range(3)]}),
    ]


def all_cases():
    rng = random.Random(5)
    cases, k = [], 0
    for _ in range(3):
        for shape, _ in shapes(0):
            k += 1
            fields = dict(shapes(k))[shape]
            n = len(fields.get("context") or fields["retrieved"])
            verdicts = {(answer, i): {"reason": f"judged {k}/{i}", "verdict": rng.choice(VERDICTS)}
                        for answer in ("REF", "ANS", "any") for i in range(n)}
            reference_entities = rng.sample(ENTITY_POOL, rng.randint(0, 4))
            if rng.random() < 0.3:  # the judge repeats an entity: Ragas divides by the list's length
                reference_entities += reference_entities[:1]
            entities = {"reference": {"entities": reference_entities},
                        "passages": {"entities": rng.sample(ENTITY_POOL, rng.randint(0, 5))}}
            cases.append({"k": k, "shape": shape, "fields": fields, "verdicts": verdicts, "entities": entities})
    # replies neither reads: a verdict that is no integer, a reply with no JSON, an entity list in prose
    for shape, verdict, entities in (("unreadable verdict", {"reason": "r", "verdict": "yes"}, None),
                                     ("no JSON at all", "I think it was useful.", "Oslo and Norway.")):
        k += 1
        fields = dict(shapes(k))["four passages"]
        verdicts = {(answer, i): {"reason": f"judged {k}/{i}", "verdict": 1}
                    for answer in ("REF", "ANS", "any") for i in range(4)}
        verdicts["REF", 2] = verdicts["ANS", 1] = verdict
        cases.append({"k": k, "shape": shape, "fields": fields, "verdicts": verdicts,
                      "entities": {"reference": entities or {"entities": ["Oslo"]},
                                   "passages": {"entities": ["Oslo"]}}})
    return cases


def rules(cases):
    """Verdicts against the reference or the answer first, then any passage's (an empty answer)."""
    precision, entities = ("|".join(PRECISION), "|".join(ENTITIES))
    specific, fallback = [], []
    for c in cases:
        k = c["k"]
        for (answer, i), reply in c["verdicts"].items():
            if answer == "any":
                fallback.append({"regex": precision, "contains": f"pass-{k}-{i} ", "content": reply})
            else:
                specific.append({"regex": precision, "contains": [f"pass-{k}-{i} ", f"{answer}-{k} "], "content": reply})
        specific.append({"regex": entities, "contains": f"REF-{k} ", "content": c["entities"]["reference"]})
        specific.append({"regex": entities, "contains": f"pass-{k}-0 ", "content": c["entities"]["passages"]})
    return specific + fallback


def ranked_texts(fields):
    from evalyard import ranked_passages

    if "retrieved" in fields:
        return [p["text"] for p in ranked_passages(fields["retrieved"])]
    return fields["context"]


RAGAS = r"""
import asyncio, json, sys, warnings
warnings.simplefilter("ignore")
from langchain_openai import ChatOpenAI
from ragas.dataset_schema import SingleTurnSample
from ragas.llms import LangchainLLMWrapper
from ragas.metrics import ContextEntityRecall, LLMContextPrecisionWithoutReference, LLMContextPrecisionWithReference

async def main(data):
    llm = LangchainLLMWrapper(ChatOpenAI(model="fake-judge", base_url=data["base_url"], api_key="none",
                                         max_retries=0))
    metrics = {"context_precision": LLMContextPrecisionWithReference(llm=llm),
               "context_precision_without_reference": LLMContextPrecisionWithoutReference(llm=llm),
               "context_entity_recall": ContextEntityRecall(llm=llm)}
    out = []
    for case in data["cases"]:
        row = {}
        for name, metric in metrics.items():
            sample = SingleTurnSample(user_input=case["input"], response=case["candidate"],
                                      reference=case["reference"], retrieved_contexts=case["contexts"])
            try:
                value = await metric.single_turn_ascore(sample)
                row[name] = None if value != value else float(value)
            except Exception as exc:
                row[name], row[name + "_error"] = None, type(exc).__name__
        out.append(row)
    return out

print(json.dumps(asyncio.run(main(json.load(sys.stdin)))))
"""


def request_counts(bodies):
    """Requests per (step, case k), read from the prompts the server received."""
    from evalyard.testing.scripted import prompt_text

    counts = Counter()
    for body in bodies:
        prompt = prompt_text(body["messages"])
        k = int(re.search(r"\bcase-(\d+)\b", prompt).group(1))
        step = "entities" if any(p in prompt for p in ENTITIES) else "precision"
        counts[step, k] += 1
    return counts


def run_evalyard(app, tmp_path, cases, server, name="passages"):
    data = tmp_path / f"{name}.jsonl"
    data.write_text("".join(json.dumps({"id": str(c["k"]), **c["fields"]}) + "\n" for c in cases))
    suite = {"name": f"ragas-{name}", "data": str(data), "scorers": [f"ragas/{m}" for m in METRICS],
             "models": {"openai/fake-judge": {"api_base": server.base_url, "supports_schema": True}}}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return CliRunner().invoke(cli, ["run", str(path), "--judge-model", "openai/fake-judge", "--json"],
                              obj=app, catch_exceptions=False)


def exported(app, run):
    run_id = json.loads(run.stdout)["run_id"]
    rows = CliRunner().invoke(cli, ["runs", "export", run_id], obj=app, catch_exceptions=False).stdout
    return {(r["scorer"].split("/")[-1], int(r["case_id"])): r for r in map(json.loads, rows.splitlines())}


def test_passage_metrics_equal_ragas(app, tmp_path, ragas_python, monkeypatch):
    from reference_envs import run_reference
    from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig

    monkeypatch.setenv("RAGAS_DO_NOT_TRACK", "true")
    cases = all_cases()
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump(rules(cases), sort_keys=False))
    with FakeOpenAIServer(FakeServerConfig(rules=str(rules_file), record=True)) as server:
        theirs = run_reference(ragas_python, RAGAS, {"base_url": server.base_url, "cases": [
            {**c["fields"], "contexts": ranked_texts(c["fields"])} for c in cases]})
        their_calls = request_counts(server.stats.bodies)
        server.stats.bodies.clear()
        run = run_evalyard(app, tmp_path, cases, server)
        assert run.exit_code in (0, 1), run.output
        our_calls = request_counts(server.stats.bodies)
        ours = exported(app, run)
        before = server.stats.requests
        again = run_evalyard(app, tmp_path, cases, server)
        assert again.exit_code in (0, 1) and server.stats.requests == before  # the cached rerun asks nothing
        assert {key: r["value"] for key, r in exported(app, again).items()} == {
            key: r["value"] for key, r in ours.items()}

    table, differences = {}, []
    for c, row in zip(cases, theirs):
        for metric in METRICS:
            result = ours[metric, c["k"]]
            value, expected = result["value"], row[metric]
            # Ragas divides by (useful + 1e-10) and by (entities + 1e-8); evalyard by the counts
            equal = (value is None and expected is None) or (
                value is not None and expected is not None and abs(value - expected) <= 1e-7)
            if not equal:
                differences.append((c["k"], c["shape"], metric, value, expected, result["error"]))
            if value is None:
                assert result["error"] and row.get(metric + "_error"), (result, row)
            step = "entities" if metric == "context_entity_recall" else "precision"
            cell = table.setdefault((metric, c["shape"]), [0, 0])
            cell[0] += 1
            cell[1] += equal
            calls = table.setdefault((step, c["shape"]), [0, 0])
            if metric != "context_precision_without_reference":  # both precisions counted once, together
                calls[0] += our_calls[step, c["k"]]
                calls[1] += their_calls[step, c["k"]]
            if row.get(metric + "_error") is None:  # Ragas scored it: evalyard never asks more
                assert our_calls[step, c["k"]] <= their_calls[step, c["k"]], (metric, c["shape"])
    assert differences == []
    # the verdicts vary: several values per metric, and the two precisions disagree somewhere
    for metric in METRICS:
        assert len({row[metric] for row in theirs if row[metric] is not None}) >= 4, metric
        assert any(row[metric] is None for row in theirs), metric
    assert any(row["context_precision"] != row["context_precision_without_reference"] for row in theirs)
    # the answer equals the reference: both precisions ask the same, and the cache answers the second
    shared = [c for c in cases if c["shape"] == "answer equals reference"]
    for c in shared:
        assert ours["context_precision", c["k"]]["value"] == ours["context_precision_without_reference", c["k"]]["value"]
        assert our_calls["precision", c["k"]] * 2 == their_calls["precision", c["k"]]
    print("\nmetric | shape | cases | equal")
    for (metric, shape), (count, equal) in sorted(table.items()):
        if metric in METRICS:
            print(f"{metric} | {shape} | {count} | {equal}")
    print("\nstep | shape | calls evalyard | calls ragas")
    for (step, shape), (mine, their) in sorted(table.items()):
        if step not in METRICS:
            print(f"{step} | {shape} | {mine} | {their}")


def test_a_case_without_passages_is_refused_before_any_call(app, tmp_path):
    from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig

    cases = [{"k": 1, "fields": {"input": "q", "candidate": "a", "reference": "r", "context": []}}]
    with FakeOpenAIServer(FakeServerConfig(reply="{}")) as server:
        run = run_evalyard(app, tmp_path, cases, server, name="refused")
        assert run.exit_code == 2
        assert "case '1' has no context, which scorer 'ragas/context_precision' requires" in run.output
        assert server.stats.requests == 0
