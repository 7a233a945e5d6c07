"""rag/pipeline through the real CLI: the user's own retriever (a keyword-overlap search in a .py
file) and answer function run per case; retrieval scorers score what this run retrieved, not the
data's recorded ranking; --param grids over the pipeline's parameters; a raising function or a bad
ranking is that case's error; an unloadable function is exit 2 with nothing stored; epochs call
the pipeline again; the HTTP mode against a local endpoint."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner
from testutil import error_lines

from evalyard.cli import cli

DOCS = {
    "refunds": "Refunds are paid within 14 days of receiving the returned item.",
    "returns": "Items can be returned within 30 days of delivery.",
    "shipping": "Orders ship within 2 business days; shipping is free over 50 euros.",
    "warranty": "Every device has a two year warranty covering defects.",
    "contact": "Reach support by email or phone, weekdays 9 to 5.",
}

SEARCH = f'''
import asyncio, json, os, random, re

DOCS = {DOCS!r}
LOG = os.path.join(os.path.dirname(__file__), "calls.log")


def words(text):
    return set(re.findall(r"[a-z]+", text.lower()))


def search(query, top_k=3):
    """BM25-ish: documents ranked by the query words they share (ties by id)."""
    if "explode" in query:
        raise RuntimeError("the index is down")
    q = words(query)
    ranked = sorted(((len(q & words(text)), doc) for doc, text in DOCS.items()), key=lambda p: (-p[0], p[1]))
    with open(LOG, "a") as log:
        log.write(query + "\\n")
    return [{{"id": doc, "text": DOCS[doc], "score": float(s)}} for s, doc in ranked[:top_k]]


async def asearch(query, top_k=3, index="bm25"):
    await asyncio.sleep(0)
    found = search(query, top_k)
    return found if index == "bm25" else list(reversed(found))


def texts(query):
    return [DOCS["refunds"], DOCS["returns"]]


def lucky(query, top_k=3):
    return random.sample([{{"id": d, "text": t}} for d, t in DOCS.items()], top_k)


def answer(query, passages, style="plain"):
    if "explode" in query:
        raise ValueError("no answer today")
    return ("> " if style == "quoted" else "") + (passages[0]["text"] if passages else "I don't know.")


def duplicates(query):
    return [{{"id": "refunds"}}, {{"id": "refunds"}}]


def not_a_list(query):
    return {{"refunds": 1.0}}


NOT_CALLABLE = 3
'''

CASES = [
    # each case records a ranking the pipeline does not make: scorers must not read it
    {"id": "q1", "input": "How many days until refunds are paid?", "relevant": {"refunds": 2, "returns": 1}},
    {"id": "q2", "input": "Is shipping free?", "relevant": ["shipping"]},
    {"id": "q3", "input": "How long is the warranty on a device?", "relevant": ["warranty"]},
    {"id": "q4", "input": "Can items be returned after delivery?", "relevant": {"returns": 1, "refunds": 1}},
]


def invoke(app, *args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj=app, catch_exceptions=False)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "search.py").write_text(SEARCH)
    recorded = [{**case, "retrieved": [{"id": "contact", "score": 1.0}]} for case in CASES]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in recorded))
    return tmp_path


def search_of(project):
    from evalyard import import_file

    return import_file(str(project / "search.py"))


def recall(relevant, retrieved) -> float:
    wanted = {d for d, g in (relevant.items() if isinstance(relevant, dict) else ((d, 1) for d in relevant)) if g > 0}
    return len(wanted & {p["id"] for p in retrieved}) / len(wanted)


def results(app, run_id):
    out = invoke(app, "runs", "export", run_id, "--format", "jsonl")
    assert out.exit_code == 0, out.output
    return [json.loads(line) for line in out.stdout.splitlines()]


def candidates(app, run_id):
    from sqlmodel import Session, select

    from evalyard.store.models import CandidateRow

    with Session(app.open_store(None).engine) as session:
        return {row.case_id: row for row in session.exec(select(CandidateRow).where(CandidateRow.run_id == run_id))}


def test_retrieval_scorers_score_what_the_pipeline_retrieved(app, project):
    search = search_of(project)
    out = invoke(app, "run", project / "cases.jsonl", "-s", "recall@10", "-s", "ndcg@10", "--json", "-g",
                 f"rag/pipeline:retriever={project}/search.py:search,answer={project}/search.py:answer,top_k=2")
    assert out.exit_code == 0, out.output
    run = json.loads(out.stdout)
    expected = [recall(c["relevant"], search.search(c["input"], top_k=2)) for c in CASES]
    assert run["scorers"]["recall@10"]["mean"] == pytest.approx(sum(expected) / len(expected), abs=1e-12)
    assert run["scorers"]["recall@10"]["mean"] > 0  # the recorded ranking (`contact`) would score 0

    # the same numbers as scoring the ranking the pipeline made, recorded in the data
    made = [{**c, "retrieved": search.search(c["input"], top_k=2)} for c in CASES]
    (project / "made.jsonl").write_text("".join(json.dumps(c) + "\n" for c in made))
    recorded = invoke(app, "run", project / "made.jsonl", "-s", "recall@10", "-s", "ndcg@10", "--json")
    for name in ("recall@10", "ndcg@10"):
        assert run["scorers"][name]["mean"] == pytest.approx(json.loads(recorded.stdout)["scorers"][name]["mean"],
                                                             abs=1e-12)

    stored = candidates(app, run["run_id"])
    q1 = stored["q1"]
    assert q1.text == DOCS["refunds"]  # the answer function's text is the candidate
    assert [p["id"] for p in q1.dialogue["retrieved"]] == ["refunds", "returns"]  # stored with the output
    details = q1.details
    assert details["retrieval_ms"] >= 0 and details["answer_ms"] >= 0 and details["passages"] == 2
    assert details["params"] == {"top_k": 2}


def test_async_functions_texts_and_parameters_reach_the_functions_they_name(app, project):
    out = invoke(app, "run", project / "cases.jsonl", "-s", "recall@10", "--json", "-g",
                 f"rag/pipeline:retriever={project}/search.py:asearch,answer={project}/search.py:answer,"
                 "top_k=1,index=dense,style=quoted")
    assert out.exit_code == 0, out.output
    stored = candidates(app, json.loads(out.stdout)["run_id"])
    assert stored["q2"].text == "> " + DOCS["shipping"]  # style went to answer only, top_k/index to asearch only

    texts = invoke(app, "run", project / "cases.jsonl", "-s", "recall@10", "--json", "-g",
                   f"rag/pipeline:retriever={project}/search.py:texts")  # plain texts: ids by position
    assert texts.exit_code == 0, texts.output
    assert json.loads(texts.stdout)["scorers"]["recall@10"]["mean"] == 0.0  # ids "1", "2" are not doc ids


def test_a_grid_over_top_k_gives_a_cell_per_value(app, project):
    out = invoke(app, "run", project / "cases.jsonl", "-s", "recall@10", "--json", "--param", "top_k=1,3", "-g",
                 f"rag/pipeline:retriever={project}/search.py:search")
    assert out.exit_code == 0, out.output
    grid = json.loads(out.stdout)
    assert [c["label"] for c in grid["cells"]] == ["rag/pipeline top_k=1", "rag/pipeline top_k=3"]
    means = [c["scorers"]["recall@10"]["mean"] for c in grid["comparison"]["cells"]]
    search = search_of(project)
    for mean, k in zip(means, (1, 3)):
        expected = [recall(c["relevant"], search.search(c["input"], top_k=k)) for c in CASES]
        assert mean == pytest.approx(sum(expected) / len(expected), abs=1e-12)
    assert means[0] < means[1]


def test_a_raising_function_or_a_bad_ranking_is_that_cases_error(app, project):
    data = project / "cases.jsonl"
    data.write_text(data.read_text() + json.dumps({"id": "q5", "input": "explode now", "relevant": ["contact"]}) + "\n")
    out = invoke(app, "run", data, "-s", "recall@10", "--json", "-g",
                 f"rag/pipeline:retriever={project}/search.py:search")
    assert out.exit_code == 0, out.output
    run = json.loads(out.stdout)
    assert run["scorers"]["recall@10"]["errors"] == 1 and run["scorers"]["recall@10"]["scored"] == 4
    stored = candidates(app, run["run_id"])
    assert stored["q5"].error == "RuntimeError: the index is down" and stored["q5"].text is None
    assert [r["error"] for r in results(app, run["run_id"]) if r["case_id"] == "q5"] == [
        "no candidate: its generation failed"]

    answer = invoke(app, "run", data, "-s", "recall@10", "--json", "-g",
                    f"rag/pipeline:retriever={project}/search.py:texts,answer={project}/search.py:answer")
    assert candidates(app, json.loads(answer.stdout)["run_id"])["q5"].error == "ValueError: no answer today"

    for function, message in (("duplicates", "the retriever returned a bad ranking at retrieved[1].id: doc id "
                                             "'refunds' is retrieved twice in one ranking"),
                              ("not_a_list", "the retriever returned a bad ranking: expected a list of passages")):
        bad = invoke(app, "run", data, "-s", "recall@10", "--json", "-g",
                     f"rag/pipeline:retriever={project}/search.py:{function}")
        assert bad.exit_code == 1, bad.output  # every result is an error
        errors = {row.error for row in candidates(app, json.loads(bad.stdout)["run_id"]).values()}
        assert len(errors) == 1 and errors.pop().startswith(f"ValueError: {message}")


@pytest.mark.parametrize("target, says", [
    ("{p}/missing.py:search", "cannot load it"),
    ("{p}/search.py:nowhere", "has no attribute 'nowhere'"),
    ("{p}/search.py:NOT_CALLABLE", "is not callable"),
    ("no_such_module_at_all:search", "No module named 'no_such_module_at_all'"),
    ("{p}/search.py", "expected 'module:function'"),
])
def test_a_function_that_cannot_be_loaded_is_refused_before_anything_runs(app, project, target, says):
    spec = f"rag/pipeline:retriever={target.format(p=project)}"
    out = invoke(app, "run", project / "cases.jsonl", "-s", "recall@10", "-g", spec)
    assert out.exit_code == 2
    (line,) = error_lines(out.output)
    assert says in line, out.output
    assert not (project / "calls.log").exists()
    listed = invoke(app, "runs", "list", "--json")
    assert json.loads(listed.stdout) == []


def test_a_parameter_no_function_takes_and_a_bad_config_are_refused(app, project):
    for spec, says in ((f"retriever={project}/search.py:search,topk=3", "parameter 'topk' is not taken"),
                       ("", "needs either retriever="),
                       (f"retriever={project}/search.py:search,url=http://127.0.0.1:9", "not both"),
                       ("url=ftp://x", "expected an http:// or https:// URL")):
        out = invoke(app, "run", project / "cases.jsonl", "-s", "recall@10", "-g", f"rag/pipeline:{spec}".rstrip(":"))
        assert out.exit_code == 2 and says in out.output, out.output
    assert json.loads(invoke(app, "runs", "list", "--json").stdout) == []


def test_each_epoch_calls_the_pipeline_again(app, project):
    out = invoke(app, "run", project / "cases.jsonl", "-s", "recall@10", "--epochs", "3", "--json", "-g",
                 f"rag/pipeline:retriever={project}/search.py:search,top_k=1")
    assert out.exit_code == 0, out.output
    assert len((project / "calls.log").read_text().splitlines()) == 3 * len(CASES)
    lucky = invoke(app, "run", project / "cases.jsonl", "-s", "recall@10", "--epochs", "4", "--json", "-g",
                   f"rag/pipeline:retriever={project}/search.py:lucky,top_k=2")
    epochs = json.loads(lucky.stdout)["scorers"]["recall@10"]["epochs"]
    assert epochs["n"] == 4 and epochs["cases"] == 4


def test_the_pipeline_behind_an_http_endpoint(app, project):
    search = search_of(project)
    seen = []

    class Pipeline(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body)
            if "warranty" in body["input"]:
                self.send_response(500)
                self.end_headers()
                self.wfile.write(b"index unavailable")
                return
            found = search.search(body["input"], top_k=body["params"].get("top_k", 3))
            reply = json.dumps({"retrieved": found, "answer": found[0]["text"], "retrieval_ms": 1.5}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Pipeline)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/rag"
        out = invoke(app, "run", project / "cases.jsonl", "-s", "recall@10", "--json", "-g",
                     f"rag/pipeline:url={url},top_k=1")
    finally:
        server.shutdown()
        server.server_close()
    assert out.exit_code == 0, out.output
    run = json.loads(out.stdout)
    assert sorted(b["id"] for b in seen) == ["q1", "q2", "q3", "q4"] and seen[0]["params"] == {"top_k": 1}
    expected = [recall(c["relevant"], search.search(c["input"], top_k=1)) for c in CASES if c["id"] != "q3"]
    assert run["scorers"]["recall@10"]["mean"] == pytest.approx(sum(expected) / len(expected), abs=1e-12)
    assert run["scorers"]["recall@10"]["errors"] == 1
    stored = candidates(app, run["run_id"])
    assert stored["q3"].error == "RuntimeError: " + url + " answered HTTP 500: index unavailable"
    assert stored["q1"].text == DOCS["refunds"] and stored["q1"].details["retrieval_ms"] == 1.5
    assert stored["q1"].details["latency_ms"] > 0


def test_evalyard_generators_lists_the_pipeline(app):
    out = invoke(app, "generators", "--json")
    [pipeline] = [g for g in json.loads(out.stdout) if g["qualified"] == "rag/pipeline"]
    assert pipeline["plugin"] == "retrieval" and pipeline["fills"] == ["candidate", "retrieved", "context"]
    assert [c["name"] for c in pipeline["config"]] == ["retriever", "answer", "url", "timeout", "params"]


def test_a_suites_own_pipeline_and_its_parameters_in_a_grid(app, project):
    (project / "suite.yaml").write_text(f"""name: rag
data: cases.jsonl
scorers: [recall@10]
generator:
  name: rag/pipeline
  retriever: {project}/search.py:search
  params: {{top_k: 1}}
""")
    single = invoke(app, "run", project / "suite.yaml", "--json")
    assert single.exit_code == 0, single.output
    out = invoke(app, "run", project / "suite.yaml", "--param", "top_k=1,3", "--json")
    assert out.exit_code == 0, out.output
    cells = json.loads(out.stdout)["comparison"]["cells"]
    assert [c["label"] for c in cells] == ["rag/pipeline top_k=1", "rag/pipeline top_k=3"]
    assert cells[0]["scorers"]["recall@10"]["mean"] == json.loads(single.stdout)["scorers"]["recall@10"]["mean"]
    assert cells[0]["scorers"]["recall@10"]["mean"] < cells[1]["scorers"]["recall@10"]["mean"]


def test_a_judge_reads_the_passages_this_run_retrieved_as_context(app, tmp_path):
    """The case's own context is replaced by the texts the pipeline retrieved (every epoch too)."""
    retriever = tmp_path / "fixed.py"
    retriever.write_text("def search(query):\n    return [{'id': 'p1', 'text': 'retrieved now', 'score': 1.0}]\n")
    data = tmp_path / "cases.jsonl"
    data.write_text(json.dumps({"id": "a", "input": "q", "context": ["from the data"], "reference": "retrieved now",
                                "relevant": ["p1"]}) + "\n")
    for epochs in ("1", "2"):
        result = CliRunner().invoke(cli, ["run", str(data), "-g", f"rag/pipeline:retriever={retriever}:search",
                                          "-s", "recall", "--epochs", epochs, "--json"], obj=app,
                                    catch_exceptions=False)
        assert result.exit_code == 0, result.output
        store = app.open_store()
        run = store.get_run(json.loads(result.stdout)["run_id"])
        (case,) = store.run_cases(run)
        assert case.context == ["retrieved now"] and case.retrieved[0]["id"] == "p1"


def test_a_case_without_context_is_judged_on_what_the_pipeline_retrieves(installed_plugins, app, tmp_path):
    """The pipeline fills the context (its passages' texts): a judge that needs a context accepts a
    case that has none of its own, and reads what this run retrieved."""
    retriever = tmp_path / "fixed.py"
    retriever.write_text("def search(query):\n    return [{'id': 'p1', 'text': 'retrieved now', 'score': 1.0}]\n")
    rules = tmp_path / "rules.yaml"
    rules.write_text("- {contains: 'retrieved now', content: '2'}\n- {content: '0'}\n")
    data = tmp_path / "cases.jsonl"
    data.write_text(json.dumps({"id": "a", "input": "q", "relevant": ["p1"]}) + "\n")
    result = CliRunner().invoke(cli, ["run", str(data), "-g", f"rag/pipeline:retriever={retriever}:search",
                                      "-s", "recall", "-s", "ragas/context_relevance",
                                      "--judge-model", f"scripted/{rules}", "--json"], obj=app, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    scorers = json.loads(result.stdout)["scorers"]
    assert scorers["ragas/context_relevance"]["errors"] == 0 and scorers["ragas/context_relevance"]["mean"] == 1.0
