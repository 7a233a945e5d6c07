"""Every retrieval measure equals trec_eval's (through pytrec-eval-terrier) to 1e-9, on generated
runs with tied scores, unjudged documents, graded and negative qrels, empty rankings and queries
with no relevant document, at several cutoffs."""

from __future__ import annotations

import random

import pytest

from evalyard_retrieval.measures import MEASURES, ranked

pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec-eval-terrier is a test dependency of evalyard-retrieval")

CUTOFFS = (1, 3, 5, 10, 20)
#: our measure at k -> trec_eval's name (k=None: the measure on the whole ranking)
TREC = {
    ("precision", None): "set_P", ("recall", None): "set_recall", ("map", None): "map", ("ndcg", None): "ndcg",
    ("mrr", None): "recip_rank", ("r_precision", None): "Rprec",
    **{(name, k): f"{trec}_{k}" for k in CUTOFFS
       for name, trec in (("precision", "P"), ("recall", "recall"), ("map", "map_cut"), ("ndcg", "ndcg_cut"),
                          ("hit_rate", "success"))},
}
ASKED = {"set_P", "set_recall", "map", "ndcg", "recip_rank", "Rprec", "num_rel_ret",
         *(f"{m}.{','.join(map(str, CUTOFFS))}" for m in ("P", "recall", "map_cut", "ndcg_cut", "success"))}


def generated(seed: int, queries: int = 60):
    rng = random.Random(seed)
    pool = [f"d{i}" for i in range(40)] + ["D1", "d1a", "é", "z"]  # mixed case and non-ASCII ids for the tie order
    qrels, run = {}, {}
    for q in range(queries):
        qid = f"q{q}"
        judged = rng.sample(pool, rng.randint(1, 15))
        shape = rng.random()
        grades = ([0] if shape < 0.15 else [-1, 0, 0, 1, 1, 2, 3])  # some queries have no relevant document
        qrels[qid] = {doc: rng.choice(grades) for doc in judged}
        size = 0 if rng.random() < 0.08 else rng.randint(1, 30)
        docs = rng.sample(pool, size)
        run[qid] = {doc: float(rng.choice([1, 2, 3, 0.5, 0.25]) if rng.random() < 0.6 else round(rng.random(), 2))
                    for doc in docs}  # many ties
    return qrels, run


@pytest.mark.parametrize("seed", range(8))
def test_every_measure_equals_trec_eval(seed):
    qrels, run = generated(seed)
    expected = pytrec_eval.RelevanceEvaluator(qrels, ASKED).evaluate(run)
    compared = 0
    for qid, docs in run.items():
        order = ranked(list(docs.items()))
        trec = expected[qid]
        for (name, k), trec_name in TREC.items():
            ours = MEASURES[name](order, qrels[qid], k)
            assert ours == pytest.approx(trec[trec_name], abs=1e-9), (seed, qid, name, k)
            compared += 1
        # hit rate over the whole ranking and MRR@k: trec_eval has no such cutoff; they are
        # num_rel_ret > 0 and recip_rank on the ranking cut at k
        assert MEASURES["hit_rate"](order, qrels[qid]) == float(trec["num_rel_ret"] > 0)
        for k in CUTOFFS:
            cut = {doc: docs[doc] for doc in order[:k]}
            rr = pytrec_eval.RelevanceEvaluator({qid: qrels[qid]}, {"recip_rank"}).evaluate({qid: cut})
            want = rr[qid]["recip_rank"] if qid in rr else 0.0
            assert MEASURES["mrr"](order, qrels[qid], k) == pytest.approx(want, abs=1e-9)
    assert compared > 1000


def test_the_tie_order_is_trec_evals():
    # equal scores: the doc id descending, by bytes ("d" > "D", "é" > "z")
    assert ranked([("a", 1.0), ("b", 1.0), ("c", 2.0)]) == ["c", "b", "a"]
    assert ranked([("D1", 1.0), ("d1", 1.0), ("é", 1.0), ("z", 1.0)]) == ["é", "z", "d1", "D1"]
    assert ranked(["b", "a"]) == ["b", "a"]  # no scores: the list's own order
    with pytest.raises(ValueError):
        ranked([("a", 1.0), "b"])
