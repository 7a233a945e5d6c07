"""Ragas' non-LLM context precision and recall (by ids, by string similarity) equal ragas 0.4.3's
value for value (to 1e-9: Ragas adds 1e-10 to a denominator), on generated samples: one passage,
fifty, no match, exact copies, near copies around the similarity threshold, every distance. Where
Ragas gives NaN or fails, evalyard records the case's error. Ragas runs in a venv of its own
(tests/reference_envs.py)."""

from __future__ import annotations

import random

import pytest
from reference_envs import run_reference

from evalyard import Case
from evalyard_retrieval.context import (IdBasedContextPrecision, IdBasedContextRecall, NonLlmContextPrecision,
                                        NonLlmContextRecall)

RAGAS = r"""
import asyncio, json, math, sys
from ragas.dataset_schema import SingleTurnSample
from ragas.metrics import (IDBasedContextPrecision, IDBasedContextRecall, NonLLMContextPrecisionWithReference,
                           NonLLMContextRecall)
from ragas.metrics._string import DistanceMeasure, NonLLMStringSimilarity

async def main(samples):
    out = []
    for s in samples:
        measure = NonLLMStringSimilarity(distance_measure=DistanceMeasure(s["distance"]))
        row = {}
        for name, metric, fields in (
                ("id_based_context_precision", IDBasedContextPrecision(), ("retrieved_context_ids", "reference_context_ids")),
                ("id_based_context_recall", IDBasedContextRecall(), ("retrieved_context_ids", "reference_context_ids")),
                ("non_llm_context_precision", NonLLMContextPrecisionWithReference(distance_measure=measure, threshold=s["threshold"]),
                 ("retrieved_contexts", "reference_contexts")),
                ("non_llm_context_recall", NonLLMContextRecall(threshold=s["threshold"]), ("retrieved_contexts", "reference_contexts"))):
            if name == "non_llm_context_recall":
                metric.distance_measure = DistanceMeasure(s["distance"])
            try:
                value = await metric.single_turn_ascore(SingleTurnSample(**{f: s[f] for f in fields}))
                row[name] = None if value is None or math.isnan(value) else float(value)
            except Exception as exc:
                row[name] = "error: " + type(exc).__name__
        out.append(row)
    return out

print(json.dumps(asyncio.run(main(json.load(sys.stdin)))))
"""

WORDS = "the cat sat on a mat while rain fell over quiet hills and rivers ran to sea".split()


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14)))


def near(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(rng.randint(0, max(1, len(chars) // 2))):
        chars[rng.randrange(len(chars))] = rng.choice("abcdefgh ")
    return "".join(chars)


def samples(seed: int, n: int = 120) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        refs = [sentence(rng) for _ in range(rng.choice([0, 1, 1, 2, 3]))]
        size = rng.choice([0, 1, 2, 5, 50]) if i % 7 else 1
        retrieved = [rng.choice([lambda: sentence(rng), lambda: near(rng, rng.choice(refs)) if refs else "x",
                                 lambda: rng.choice(refs) if refs else "y"])() for _ in range(size)]
        ids = [f"d{rng.randint(0, 30)}" for _ in range(size)]
        out.append({"retrieved_contexts": retrieved, "reference_contexts": refs,
                    "retrieved_context_ids": list(dict.fromkeys(ids)),
                    "reference_context_ids": [f"d{rng.randint(0, 30)}" for _ in range(rng.choice([0, 1, 3, 8]))],
                    "distance": rng.choice(["levenshtein", "levenshtein", "hamming", "jaro", "jaro_winkler"]),
                    "threshold": rng.choice([0.5, 0.5, 0.3, 0.8])})
    return out


def ours(sample: dict) -> dict:
    case = Case(id="c", retrieved=[{"id": i, "text": t} for i, t in zip(
        sample["retrieved_context_ids"] or [str(n) for n in range(len(sample["retrieved_contexts"]))],
        sample["retrieved_contexts"])] if len(sample["retrieved_context_ids"]) == len(sample["retrieved_contexts"])
        else None, relevant={doc: 1 for doc in sample["reference_context_ids"]},
        reference_contexts=sample["reference_contexts"])
    by_ids = Case(id="c", retrieved=[{"id": doc} for doc in sample["retrieved_context_ids"]],
                  relevant={doc: 1 for doc in sample["reference_context_ids"]})
    by_text = Case(id="c", retrieved=[{"id": str(n), "text": t} for n, t in enumerate(sample["retrieved_contexts"])],
                   reference_contexts=sample["reference_contexts"])
    del case
    options = {"similarity": sample["threshold"], "distance": sample["distance"]}
    row = {}
    for name, scorer, subject in (
            ("id_based_context_precision", IdBasedContextPrecision(), by_ids),
            ("id_based_context_recall", IdBasedContextRecall(), by_ids),
            ("non_llm_context_precision", NonLlmContextPrecision(**options), by_text),
            ("non_llm_context_recall", NonLlmContextRecall(**options), by_text)):
        score = scorer.score(subject)
        row[name] = score.value if score.error is None else "error"
    return row


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_the_context_measures_equal_ragas(ragas_python, seed):
    data = samples(seed)
    expected = run_reference(ragas_python, RAGAS, data)
    compared = errors = 0
    for sample, want in zip(data, expected):
        got = ours(sample)
        for name, value in want.items():
            if value is None or isinstance(value, str):  # Ragas: NaN or a failure; evalyard: the case's error
                assert got[name] == "error", (name, sample, value, got[name])
                errors += 1
            else:
                assert got[name] == pytest.approx(value, abs=1e-9), (name, sample)
                compared += 1
    assert compared > 300 and errors > 10
