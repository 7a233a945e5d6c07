"""Retrieval through the real CLI: cases holding a retrieval (JSONL), TREC run files with qrels,
ranx / pytrec_eval JSON; the run's means equal trec_eval's; NAME@K; bad retrieval files refused
in one line naming file, line and field, with nothing stored; two retrievers compared by query."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner
from testutil import error_lines

from evalyard.cli import cli

pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec-eval-terrier is a test dependency of evalyard-retrieval")


def invoke(app, *args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj=app, catch_exceptions=False)


def write_run(path, run: dict[str, dict[str, float]], tag="sys"):
    lines = []
    for qid, docs in run.items():
        for rank, (doc, score) in enumerate(sorted(docs.items(), key=lambda p: -p[1]), start=1):
            lines.append(f"{qid} Q0 {doc} {rank} {score} {tag}")
    path.write_text("\n".join(lines) + "\n")
    return path


def write_qrels(path, qrels: dict[str, dict[str, int]]):
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    return path


def generated(seed: int, queries: int = 40):
    rng = random.Random(seed)
    pool = [f"doc{i}" for i in range(30)]
    qrels, run = {}, {}
    for q in range(queries):
        qrels[f"q{q}"] = {d: rng.choice([0, 1, 1, 2, 3]) for d in rng.sample(pool, rng.randint(1, 8))}
        run[f"q{q}"] = {d: rng.choice([1.0, 0.5, round(rng.random(), 3)]) for d in rng.sample(pool, rng.randint(1, 20))}
    return qrels, run


MEASURES = {"map": "map", "ndcg": "ndcg", "mrr": "recip_rank", "r_precision": "Rprec", "recall@5": "recall_5",
            "precision@5": "P_5", "ndcg@10": "ndcg_cut_10", "map@10": "map_cut_10", "hit_rate@1": "success_1"}


def test_a_trec_run_with_qrels_gives_trec_evals_means(app, tmp_path):
    qrels, run = generated(1)
    run_file = write_run(tmp_path / "bm25.trec", run)
    qrels_file = write_qrels(tmp_path / "qrels.txt", qrels)
    args = [a for name in MEASURES for a in ("-s", name)]
    result = invoke(app, "run", run_file, "--qrels", qrels_file, *args, "--json")
    assert result.exit_code == 0, result.output
    scorers = json.loads(result.stdout)["scorers"]
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg", "recip_rank", "Rprec", "recall.5", "P.5",
                                                      "ndcg_cut.10", "map_cut.10", "success.1"}).evaluate(run)
    for ours, trec in MEASURES.items():
        mean = sum(q[trec] for q in expected.values()) / len(expected)
        assert scorers[ours]["mean"] == pytest.approx(mean, abs=1e-9), ours
        assert scorers[ours]["count"] == len(run)


def test_the_json_formats_read_the_same_run(app, tmp_path):
    qrels, run = generated(2, queries=10)
    (tmp_path / "run.json").write_text(json.dumps(run))
    (tmp_path / "qrels.json").write_text(json.dumps(qrels))
    from_json = invoke(app, "run", tmp_path / "run.json", "--format", "run-json", "--qrels", tmp_path / "qrels.json",
                       "-s", "ndcg@10", "--json")
    from_trec = invoke(app, "run", write_run(tmp_path / "run.trec", run), "--qrels",
                       write_qrels(tmp_path / "qrels.txt", qrels), "-s", "ndcg@10", "--json")
    assert from_json.exit_code == 0 and from_trec.exit_code == 0, from_json.output + from_trec.output
    assert json.loads(from_json.stdout)["scorers"]["ndcg@10"]["mean"] == pytest.approx(
        json.loads(from_trec.stdout)["scorers"]["ndcg@10"]["mean"], abs=1e-12)


def test_cases_hold_a_retrieval_and_context_gets_ids_by_position(app, tmp_path):
    data = tmp_path / "cases.jsonl"
    data.write_text("\n".join(json.dumps(c) for c in [
        {"id": "scored", "input": "a?", "relevant": {"a": 1, "c": 2},
         "retrieved": [{"id": "d", "text": "D", "score": 0.9}, {"id": "a", "text": "A", "score": 0.5},
                       {"id": "b", "text": "B", "score": 0.5}, {"id": "c", "text": "C", "score": 0.1}]},
        {"id": "ordered", "input": "b?", "relevant": ["y"], "retrieved": [{"id": "x"}, {"id": "y"}]},
        {"id": "by-position", "input": "c?", "context": ["first", "second", "third"], "relevant": ["2"]},
        {"id": "nothing-found", "input": "d?", "retrieved": [], "relevant": ["z"]},
    ]) + "\n")
    result = invoke(app, "run", data, "-s", "mrr", "--json")
    assert result.exit_code == 0, result.output
    store = app.open_store()
    values = {r.case_id: r.value for r in store.results(json.loads(result.stdout)["run_id"])}
    # d, b, a, c by trec_eval's order (b before a on the tie): the first relevant is a, third
    assert values == {"scored": pytest.approx(1 / 3), "ordered": 0.5, "by-position": 0.5, "nothing-found": 0.0}
    case = next(c for c in store.run_cases(store.get_run(json.loads(result.stdout)["run_id"])) if c.id == "scored")
    assert case.retrieved[0] == {"id": "d", "text": "D", "score": 0.9} and case.relevant == {"a": 1, "c": 2}
    # a retrieval with texts is the context the judges of an answer read, in the same rank order;
    # passages without text give none, and a case's own context stays its own
    cases = {c.id: c for c in store.run_cases(store.get_run(json.loads(result.stdout)["run_id"]))}
    assert cases["scored"].context == ["D", "B", "A", "C"]
    assert cases["ordered"].context == [] and cases["by-position"].context == ["first", "second", "third"]


BAD = [
    ("run.trec", "q1 Q0 d one 0.9 t\n", "run.trec:1: field 'rank': expected a number, got 'one'"),
    ("run.trec", "q1 Q0 d 1 high t\n", "run.trec:1: field 'score': expected a number, got 'high'"),
    ("run.trec", "q1 Q0 d 1 0.9\n", "run.trec:1: field 'tag': expected 6 columns"),
    ("run.trec", "q1 Q0 d 1 0.9 t\nq1 Q0 d 2 0.8 t\n", "run.trec:2: field 'docid': doc id 'd' is retrieved twice"),
    ("run.trec", "q1 Q0 d 1 0.9 t\nq2 Q0 d 1 0.9 t\nq1 Q0 e 2 0.1 t\n", "run.trec:3: field 'qid': query 'q1' comes back"),
    ("qrels.txt", "q1 0 a\n", "qrels.txt:1: field 'grade': expected 4 columns"),
    ("qrels.txt", "q1 0 a yes\n", "qrels.txt:1: field 'grade': a grade is a whole number, not 'yes'"),
    ("qrels.txt", "q1 0 a 1\nq1 0 a 2\n", "qrels.txt:2: field 'docid': doc id 'a' is judged twice"),
    ("cases.jsonl", json.dumps({"id": "a", "retrieved": [{"id": "x"}, {"id": "x"}], "relevant": ["x"]}) + "\n",
     "cases.jsonl:1: field 'retrieved[1].id': doc id 'x' is retrieved twice"),
    ("cases.jsonl", json.dumps({"id": "a", "retrieved": [{"id": "x", "score": 1}, {"id": "y"}], "relevant": ["x"]}) + "\n",
     "cases.jsonl:1: field 'retrieved[1].score': either every passage has a score or none has"),
    ("cases.jsonl", json.dumps({"id": "a", "retrieved": ["p"], "relevant": {"1": 0.5}}) + "\n",
     "cases.jsonl:1: field 'relevant.1': a grade is a whole number, not 0.5"),
    ("run.json", '{"q1": {"d": 1.0, "d": 2.0}}', "run.json: key 'd' appears twice in one object"),
]


@pytest.mark.parametrize("name, text, message", BAD, ids=[m.split(": ", 2)[-1][:40] for _, _, m in BAD])
def test_a_bad_retrieval_file_is_one_line_and_stores_nothing(app, tmp_path, name, text, message):
    run_file = tmp_path / "run.trec"
    run_file.write_text("q1 Q0 d 1 0.9 t\n")
    qrels_file = tmp_path / "qrels.txt"
    qrels_file.write_text("q1 0 d 1\n")
    (tmp_path / name).write_text(text)
    target = tmp_path / (name if name != "qrels.txt" else "run.trec")
    extra = ["--format", "run-json"] if name == "run.json" else []
    qrels = [] if name == "cases.jsonl" else ["--qrels", qrels_file]
    result = invoke(app, "run", target, *extra, *qrels, "-s", "map")
    assert result.exit_code == 2, result.output
    (line,) = error_lines(result.output)
    assert f"{tmp_path}/{message}" in line
    assert app.open_store().list_runs() == []


def test_cutoffs_and_their_mistakes(app, tmp_path):
    data = tmp_path / "cases.jsonl"
    data.write_text(json.dumps({"id": "a", "retrieved": ["x", "y"], "relevant": ["2"]}) + "\n")
    ok = invoke(app, "run", data, "-s", "recall@1", "-s", "recall@2", "-s", "recall:k=2", "--json")
    assert ok.exit_code == 0, ok.output
    means = {name: s["mean"] for name, s in json.loads(ok.stdout)["scorers"].items()}
    assert means == {"recall@1": 0.0, "recall@2": 1.0, "recall": 1.0}
    for args, message in ((["-s", "exact_match@3"], "takes no cutoff"), (["-s", "recall@2:k=3"], "gives k twice"),
                          (["-s", "recall:k=0"], "k must be 1 or more")):
        refused = invoke(app, "run", data, *args)
        assert refused.exit_code == 2 and message in refused.output, refused.output


def test_two_retrievers_compared_by_query(app, tmp_path):
    qrels, run = generated(3, queries=30)
    better = {q: {d: (s + 10 if qrels[q].get(d, 0) > 0 else s) for d, s in docs.items()} for q, docs in run.items()}
    qrels_file = write_qrels(tmp_path / "qrels.txt", qrels)
    runs = []
    for name, ranking in (("base", run), ("new", better)):
        done = invoke(app, "run", write_run(tmp_path / f"{name}.trec", ranking), "--qrels", qrels_file,
                      "-s", "ndcg@10", "--name", name, "--json")
        assert done.exit_code == 0, done.output
        runs.append(json.loads(done.stdout)["run_id"])
    compared = invoke(app, "compare", *runs, "--json")
    assert compared.exit_code == 0, compared.output
    ndcg = json.loads(compared.stdout)["scorers"]["ndcg@10"]
    assert ndcg["paired_cases"] == 30 and ndcg["mean_delta"] > 0 and ndcg["ci95"][0] > 0
