"""``ragas/response_relevancy`` against Ragas 0.4.3's ResponseRelevancy (the real package in its
own venv), both fed by one fake OpenAI server over HTTP: chat answers from rules, embeddings from
its ``/v1/embeddings`` (words counted into hashed dimensions, so a generated question sharing
more words with the case's question is more similar). evalyard names the embeddings model
(``openai/fake-embed``, through litellm and the model layer), Ragas reaches the same endpoint
through LangChain's OpenAIEmbeddings; so both get the same vectors.

Ragas asks for ``strictness`` completions in one request (the server gives n equal choices);
evalyard asks for ``strictness`` questions in one answer, given as the same question n times.
"""

from __future__ import annotations

import json
import random
import sys

import pytest
import yaml
from click.testing import CliRunner

from evalyard.cli import cli

#: a phrase of Ragas' prompt | a phrase of ours
MARKER = "Generate a question for the given answer|different questions that the answer below"
QUESTIONS = ["What is the capital of Norway?", "Which city is the capital of Norway?", "Where do fjords form?",
             "Who wrote Peer Gynt?", "What is the capital?", "Is Oslo big?"]


def all_cases():
    rng = random.Random(3)
    cases = []
    for k in range(1, 19):
        shape, question, noncommittal = "committal", rng.choice(QUESTIONS), 0
        if k % 6 == 0:
            shape, noncommittal = "noncommittal", 1
        elif k % 7 == 0:
            shape, question = "empty question", ""
        elif k % 8 == 0:
            shape, question = "question without words", "???"
        elif k % 9 == 0:
            shape = "no JSON"
        cases.append({"k": k, "shape": shape, "input": f"case-{k} What is the capital of Norway?",
                      "candidate": f"case-{k} It is Oslo.", "question": question, "noncommittal": noncommittal})
    return cases


def rules(cases, strictness=3):
    out = []
    for c in cases:
        one = {"question": c["question"], "noncommittal": c["noncommittal"]}
        theirs, ours = (one, {"questions": [one] * strictness}) if c["shape"] != "no JSON" else ("no idea",) * 2
        out.append({"regex": "Generate a question for the given answer", "contains": f"case-{c['k']} ",
                    "content": theirs})
        out.append({"regex": "different questions that the answer below", "contains": f"case-{c['k']} ",
                    "content": ours})
    return out


RAGAS = r"""
import asyncio, json, sys, warnings
warnings.simplefilter("ignore")
from langchain_openai import ChatOpenAI, OpenAIEmbeddings
from ragas.dataset_schema import SingleTurnSample
from ragas.embeddings import LangchainEmbeddingsWrapper
from ragas.llms import LangchainLLMWrapper
from ragas.metrics import ResponseRelevancy

async def main(data):
    llm = LangchainLLMWrapper(ChatOpenAI(model="fake-judge", base_url=data["base_url"], api_key="none",
                                         max_retries=0))
    embeddings = LangchainEmbeddingsWrapper(OpenAIEmbeddings(model="fake-embed", base_url=data["base_url"],
                                                             api_key="none", check_embedding_ctx_length=False))
    metric = ResponseRelevancy(llm=llm, embeddings=embeddings)
    out = []
    for case in data["cases"]:
        sample = SingleTurnSample(user_input=case["input"], response=case["candidate"])
        try:
            value = await metric.single_turn_ascore(sample)
            out.append({"value": None if value != value else float(value)})
        except Exception as exc:
            out.append({"value": None, "error": type(exc).__name__})
    return out

print(json.dumps(asyncio.run(main(json.load(sys.stdin)))))
"""


def run_evalyard(app, tmp_path, cases, server, config=None, name="relevancy"):
    data = tmp_path / f"{name}.jsonl"
    data.write_text("".join(json.dumps({"id": str(c["k"]), "input": c["input"], "candidate": c["candidate"]}) + "\n"
                            for c in cases))
    suite = {"name": f"ragas-{name}", "data": str(data),
             "scorers": [{"name": "ragas/response_relevancy", "config": config or {}}],
             "models": {"openai/fake-judge": {"api_base": server.base_url, "supports_schema": True},
                        "openai/fake-embed": {"api_base": server.base_url}}}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return CliRunner().invoke(cli, ["run", str(path), "--judge-model", "openai/fake-judge", "--json"],
                              obj=app, catch_exceptions=False)


def exported(app, run):
    run_id = json.loads(run.stdout)["run_id"]
    rows = CliRunner().invoke(cli, ["runs", "export", run_id], obj=app, catch_exceptions=False).stdout
    return {int(r["case_id"]): r for r in map(json.loads, rows.splitlines())}


@pytest.mark.slow
def test_response_relevancy_equals_ragas(app, tmp_path, ragas_python, monkeypatch):
    from reference_envs import run_reference
    from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig

    monkeypatch.setenv("RAGAS_DO_NOT_TRACK", "true")
    cases = all_cases()
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump(rules(cases), sort_keys=False))
    with FakeOpenAIServer(FakeServerConfig(rules=str(rules_file))) as server:
        theirs = run_reference(ragas_python, RAGAS, {"base_url": server.base_url, "cases": cases})
        their_chat, their_embeddings = server.stats.requests, server.stats.embedding_requests
        run = run_evalyard(app, tmp_path, cases, server, {"embeddings": "openai/fake-embed"})
        assert run.exit_code in (0, 1), run.output
        ours = exported(app, run)
        our_chat = server.stats.requests - their_chat
        our_embeddings = server.stats.embedding_requests - their_embeddings
        before = (server.stats.requests, server.stats.embedding_requests)
        again = run_evalyard(app, tmp_path, cases, server, {"embeddings": "openai/fake-embed"})
        assert again.exit_code in (0, 1)
        assert (server.stats.requests, server.stats.embedding_requests) == before  # the cached rerun asks nothing
        assert {k: r["value"] for k, r in exported(app, again).items()} == {k: r["value"] for k, r in ours.items()}
    table, differences = {}, []
    for c, row in zip(cases, theirs):
        result = ours[c["k"]]
        value, expected = result["value"], row["value"]
        equal = (value is None and expected is None) or (
            value is not None and expected is not None and abs(value - expected) <= 1e-9)
        if not equal:
            differences.append((c["k"], c["shape"], value, expected, result["error"]))
        if value is None:
            assert result["error"], result
        cell = table.setdefault(c["shape"], [0, 0])
        cell[0] += 1
        cell[1] += equal
    assert differences == []
    values = {row["value"] for row in theirs if row["value"] is not None}
    assert len(values) >= 4 and 0.0 in values and any(row["value"] is None for row in theirs)
    assert our_chat <= their_chat and our_embeddings <= their_embeddings
    print("\nmetric | shape | cases | equal")
    for shape, (count, equal) in sorted(table.items()):
        print(f"response_relevancy | {shape} | {count} | {equal}")
    print(f"calls for {len(cases)} cases: chat evalyard {our_chat}, ragas {their_chat}; "
          f"embeddings evalyard {our_embeddings}, ragas {their_embeddings}")


def test_the_bundled_model_runs_offline(app, tmp_path, monkeypatch):
    """The default embeddings: the embedding plugin's all-MiniLM-L6-v2, no request for embeddings."""
    from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cases = [c for c in all_cases() if c["shape"] == "committal"][:3]
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump(rules(cases), sort_keys=False))
    with FakeOpenAIServer(FakeServerConfig(rules=str(rules_file))) as server:
        run = run_evalyard(app, tmp_path, cases, server)
        assert run.exit_code in (0, 1), run.output
        assert server.stats.embedding_requests == 0
    rows = exported(app, run)
    for c in cases:
        value = rows[c["k"]]["value"]
        assert rows[c["k"]]["error"] is None and 0 < value <= 1, rows[c["k"]]
    # the question itself is more similar to the question than another one is
    by_question = {c["question"]: rows[c["k"]]["value"] for c in cases}
    if "What is the capital of Norway?" in by_question and "Who wrote Peer Gynt?" in by_question:
        assert by_question["What is the capital of Norway?"] > by_question["Who wrote Peer Gynt?"]


def test_without_the_embedding_plugin_the_bundled_name_is_refused_and_names_work(app, tmp_path, monkeypatch):
    from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig

    monkeypatch.setitem(sys.modules, "evalyard_embedding", None)  # as if not installed: importing it fails
    cases = [c for c in all_cases() if c["shape"] == "committal"][:2]
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump(rules(cases), sort_keys=False))
    with FakeOpenAIServer(FakeServerConfig(rules=str(rules_file))) as server:
        refused = run_evalyard(app, tmp_path, cases, server, name="bundled")
        assert refused.exit_code == 2 and "pip install evalyard-embedding" in refused.output, refused.output
        assert server.stats.requests == 0
        named = run_evalyard(app, tmp_path, cases, server, {"embeddings": "openai/fake-embed"}, name="named")
        assert named.exit_code in (0, 1), named.output
        assert all(r["value"] is not None for r in exported(app, named).values())
        assert server.stats.embedding_requests == 2  # one request per case: the question and its questions
