"""``ragas/answer_accuracy``, ``ragas/context_relevance`` and ``ragas/response_groundedness``
against Ragas 0.4.3's AnswerAccuracy, ContextRelevance and ResponseGroundedness (the real
package in its own venv, ``tests/reference_envs.py``), both fed by one fake OpenAI server over
HTTP: evalyard through litellm and the whole model layer, Ragas through LangChain's ChatOpenAI.

Each case's texts carry ``case-k``; a rule per (metric, template, case) answers the two
tools' prompts (each in its own words, matched by a phrase of each) with the same reply.
Replies vary: clean ratings, ratings inside prose (read as Ragas reads them: the first digit of
its order found anywhere), replies with no rating (retried, each retry a sample of its own), a
rating only on the third try (the server's ``sequences``), and a template that never rates.
"""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
import yaml
from click.testing import CliRunner

from evalyard.cli import cli

pytestmark = pytest.mark.slow

#: (metric, template 1 or 2) -> a phrase of Ragas' prompt | a phrase of ours
MARKERS = {
    ("answer_accuracy", 1): ("world class state of the art assistant", "Rate the candidate answer below"),
    ("answer_accuracy", 2): ("I will rate the User Answer", "Compare the candidate answer with the reference"),
    ("context_relevance", 1): ("evaluate the relevance score of a Context", "Judge whether the context below holds"),
    ("context_relevance", 2): ("assess the relevance score of a given Context",
                               "Score the relevance of the context to the question"),
    ("response_groundedness", 1): ("evaluate the groundedness of an assertion",
                                   "Judge whether the assertion below is supported"),
    ("response_groundedness", 2): ("assessing the strength of connections", "Rate the support the context gives"),
}
METRICS = ("answer_accuracy", "context_relevance", "response_groundedness")
RETRIED = "RETRIED-REPLY"  # a sequence: no rating twice, then one
READS = {
    "answer_accuracy": ["4", "2", "0", "4", "2", "3", "The rating is 4.", "10", "no idea", RETRIED],
    "other": ["2", "1", "0", "2", "1", "Relevance: 1 of 2", "[1]", "no idea", RETRIED],
}


def shapes(k):
    """(shape, case fields) for case k: every text carries ``case-k``."""
    tag = f"case-{k}"
    one = [f"{tag} Oslo is the capital of Norway."]
    fifty = [f"{tag} passage {i}: fact number {i} about fjords." for i in range(50)]
    ranked = [{"id": "b", "text": f"{tag} second by score", "score": 0.2},
              {"id": "a", "text": f"{tag} first by score", "score": 0.9},
              {"id": "c", "text": f"{tag} tied, lower id", "score": 0.2}]
    base = {"input": f"{tag} What is the capital of Norway?", "candidate": f"{tag} Oslo, I think.",
            "reference": f"{tag} Oslo is the capital."}
    return [
        ("one passage", {**base, "context": one}),
        ("three passages", {**base, "context": one + [f"{tag} Bergen is a city.", f"{tag} Fjords are deep."]}),
        ("fifty passages", {**base, "context": fifty}),
        ("ranked by score", {**base, "context": [p["text"] for p in ranked], "retrieved": ranked}),
        ("empty answer", {**base, "candidate": "", "context": one}),
        ("blank passages", {**base, "context": ["   ", ""]}),
        ("answer inside passages", {**base, "candidate": "Oslo is the capital of Norway", "context": one}),
        ("passages inside question", {**base, "input": f"{tag} Oslo is the capital of Norway. Is it?",
                                      "context": [f"{tag} Oslo is the capital of Norway."]}),
    ]


def all_cases():
    rng = random.Random(11)
    cases, k = [], 0
    for _ in range(3):
        for shape, _ in shapes(0):
            k += 1
            fields = dict(shapes(k))[shape]
            replies = {(metric, n): rng.choice(READS["answer_accuracy" if metric == "answer_accuracy" else "other"])
                       for metric in METRICS for n in (1, 2)}
            cases.append({"k": k, "shape": shape, "fields": fields, "replies": replies})
    # two fixed cases: the first template never rates (no value), the second never does (the first's)
    for replies_of in ({1: "no idea", 2: "2"}, {1: "1", 2: "no idea"}):
        k += 1
        replies = {(metric, n): replies_of[n] for metric in METRICS for n in (1, 2)}
        cases.append({"k": k, "shape": "never rated " + ("first" if replies_of[1] == "no idea" else "second"),
                      "fields": dict(shapes(k))["three passages"], "replies": replies})
    return cases


def rules(cases):
    out = []
    for c in cases:
        for (metric, n), reply in c["replies"].items():
            theirs, ours = MARKERS[metric, n]
            out.append({"regex": rf"(?:{theirs}|{ours}).*\bcase-{c['k']}\b", "content": reply})
    return out


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
from ragas.metrics import AnswerAccuracy, ContextRelevance, ResponseGroundedness

async def main(data):
    llm = LangchainLLMWrapper(ChatOpenAI(model="fake-judge", base_url=data["base_url"], api_key="none",
                                         max_retries=0))
    metrics = {"answer_accuracy": AnswerAccuracy(llm=llm), "context_relevance": ContextRelevance(llm=llm),
               "response_groundedness": ResponseGroundedness(llm=llm)}
    out = []
    for case in data["cases"]:
        row = {}
        for name, metric in metrics.items():
            sample = SingleTurnSample(user_input=case["input"], response=case["candidate"],
                                      reference=case["reference"], retrieved_contexts=case["contexts"])
            value = await metric.single_turn_ascore(sample)
            row[name] = None if value != value else value  # NaN: no value
        out.append(row)
    return out

print(json.dumps(asyncio.run(main(json.load(sys.stdin)))))
"""


def request_counts(bodies):
    """Requests per (metric, case k), read from the prompts the server received."""
    from evalyard.testing.scripted import prompt_text
    import re

    counts = Counter()
    for body in bodies:
        prompt = prompt_text(body["messages"])
        k = int(re.search(r"\bcase-(\d+)\b", prompt).group(1))
        metric = next(m for (m, _), phrases in MARKERS.items() if any(p in prompt for p in phrases))
        counts[metric, k] += 1
    return counts


def run_evalyard(app, tmp_path, cases, server, name="nv"):
    data = tmp_path / f"{name}.jsonl"
    data.write_text("".join(json.dumps({"id": str(c["k"]), **c["fields"]}) + "\n" for c in cases))
    suite = {"name": f"ragas-{name}", "data": str(data), "scorers": [f"ragas/{m}" for m in METRICS],
             "models": {"openai/fake-judge": {"api_base": server.base_url}}}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    run = CliRunner().invoke(cli, ["run", str(path), "--judge-model", "openai/fake-judge", "--json"],
                             obj=app, catch_exceptions=False)
    return run


def exported(app, run):
    run_id = json.loads(run.stdout)["run_id"]
    rows = CliRunner().invoke(cli, ["runs", "export", run_id], obj=app, catch_exceptions=False).stdout
    return {(r["scorer"].split("/")[-1], int(r["case_id"])): r for r in map(json.loads, rows.splitlines())}


def test_nvidia_metrics_equal_ragas(app, tmp_path, ragas_python, monkeypatch):
    from reference_envs import run_reference
    from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig

    monkeypatch.setenv("RAGAS_DO_NOT_TRACK", "true")
    cases = all_cases()
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump(rules(cases), sort_keys=False))
    config = FakeServerConfig(rules=str(rules_file), record=True, sequences={RETRIED: ["hmm", "let me see", "2"]})
    with FakeOpenAIServer(config) as server:
        theirs = run_reference(ragas_python, RAGAS, {"base_url": server.base_url, "cases": [
            {**c["fields"], "contexts": ranked_texts(c["fields"])} for c in cases]})
        their_calls = request_counts(server.stats.bodies)
        server.stats.bodies.clear()
        run = run_evalyard(app, tmp_path, cases, server)
        assert run.exit_code in (0, 1), run.output
        our_calls = request_counts(server.stats.bodies)
        ours = exported(app, run)
        # the cached rerun asks nothing
        before = server.stats.requests
        again = run_evalyard(app, tmp_path, cases, server)
        assert again.exit_code in (0, 1) and server.stats.requests == before
        assert {key: r["value"] for key, r in exported(app, again).items()} == {key: r["value"] for key, r in ours.items()}

    table, differences = {}, []
    for c, row in zip(cases, theirs):
        for metric in METRICS:
            result = ours[metric, c["k"]]
            value, expected = result["value"], row[metric]
            equal = value == expected or (value is None and expected is None)
            if not equal:
                differences.append((c["k"], c["shape"], metric, value, expected, result["error"]))
            if value is None:
                assert result["error"], result  # no value is a recorded error, never a silent gap
            cell = table.setdefault((metric, c["shape"]), [0, 0, 0, 0])
            cell[0] += 1
            cell[1] += equal
            cell[2] += our_calls[metric, c["k"]]
            cell[3] += their_calls[metric, c["k"]]
            assert our_calls[metric, c["k"]] <= their_calls[metric, c["k"]], (metric, c["shape"])
    assert differences == []
    # the values vary: a constant would not pass
    for metric in METRICS:
        values = [row[metric] for row in theirs]
        assert len({v for v in values if v is not None}) >= 3 and None in values, (metric, values)
    assert ours["context_relevance", cases[-1]["k"]]["value"] == 0.5  # the first template's rating alone
    print("\nmetric | shape | cases | equal | calls evalyard | calls ragas")
    for (metric, shape), (count, equal, mine, their) in sorted(table.items()):
        print(f"{metric} | {shape} | {count} | {equal} | {mine} | {their}")


def test_a_case_without_passages_is_refused_before_any_call(app, tmp_path):
    from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig

    cases = [{"k": 1, "fields": {"input": "case-1 q", "candidate": "case-1 a", "reference": "case-1 r"}}]
    with FakeOpenAIServer(FakeServerConfig(reply="2")) as server:
        run = run_evalyard(app, tmp_path, cases, server, name="refused")
        assert run.exit_code == 2
        assert "case '1' has no context, which scorer 'ragas/context_relevance' requires" in run.output
        assert server.stats.requests == 0
