"""A small RAG application to evaluate: two retrievers over the chunk file that
`evalyard testset generate` writes (BM25, and dense retrieval with the embedding plugin's bundled
all-MiniLM-L6-v2), and an answer written by a local model from the retrieved passages.

Used by the RAG tutorial as the system under test of `-g rag/pipeline`:

    evalyard run cases.jsonl -g rag/pipeline:retriever=examples/rag_demo/rag.py:search,\
answer=examples/rag_demo/rag.py:answer,chunks=cases.chunks.jsonl --param index=bm25,dense ...

Everything runs offline. The indexes are built once per process and chunk file.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from functools import lru_cache

WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


@lru_cache(maxsize=4)
def load_chunks(path: str) -> tuple[dict, ...]:
    with open(path, encoding="utf-8") as handle:
        return tuple(json.loads(line) for line in handle if line.strip())


class BM25:
    """Okapi BM25 (k1 = 1.5, b = 0.75, the Lucene-style idf that stays positive)."""

    def __init__(self, texts: list[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.docs = [Counter(words(t)) for t in texts]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.average = sum(self.lengths) / max(1, len(self.lengths))
        df = Counter(term for doc in self.docs for term in doc)
        n = len(self.docs)
        self.idf = {term: math.log(1 + (n - f + 0.5) / (f + 0.5)) for term, f in df.items()}

    def scores(self, query: str) -> list[float]:
        terms = [t for t in words(query) if t in self.idf]
        out = []
        for doc, length in zip(self.docs, self.lengths):
            norm = self.k1 * (1 - self.b + self.b * length / self.average)
            out.append(sum(self.idf[t] * doc[t] * (self.k1 + 1) / (doc[t] + norm) for t in terms if t in doc))
        return out


@lru_cache(maxsize=4)
def bm25_index(path: str) -> BM25:
    return BM25([c["text"] for c in load_chunks(path)])


def _vectors(texts: list[str]) -> list[list[float]]:
    from evalyard_embedding import get_model, sentence_embeddings

    found = sentence_embeddings(get_model("bundled"), texts)
    out = []
    for text in texts:
        vector = [float(x) for x in found[text].flatten().tolist()]
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        out.append([x / norm for x in vector])
    return out


@lru_cache(maxsize=4)
def dense_index(path: str) -> list[list[float]]:
    return _vectors([c["text"] for c in load_chunks(path)])


def search(query: str, index: str = "bm25", top_k: int = 5, chunks: str = "cases.chunks.jsonl") -> list[dict]:
    """The top_k chunks for the query, best first, each {id, text, score}."""
    records = load_chunks(chunks)
    if index == "bm25":
        scores = bm25_index(chunks).scores(query)
    elif index == "dense":
        (q,) = _vectors([query])
        scores = [sum(a * b for a, b in zip(q, d)) for d in dense_index(chunks)]
    else:
        raise ValueError(f"unknown index {index!r} (bm25 or dense)")
    best = sorted(range(len(records)), key=lambda i: (-scores[i], records[i]["id"]))[:top_k]
    return [{"id": records[i]["id"], "text": records[i]["text"], "score": round(scores[i], 6)} for i in best]


@lru_cache(maxsize=1)
def _layer():
    import evalyard

    return evalyard.Application().model_layer()


def answer(query: str, passages: list[dict], answer_model: str = "local/qwen2.5-coder-1.5b") -> str:
    """A short answer from the passages, by a local model (greedy)."""
    context = "\n\n".join(f"[{n}] {p['text']}" for n, p in enumerate(passages, 1))
    messages = [
        {"role": "system", "content": "You answer questions about a software project's documentation. Use only "
                                      "the passages given; if they do not hold the answer, say you do not know."},
        {"role": "user", "content": f"Passages:\n{context}\n\nQuestion: {query}\nAnswer in one or two sentences."},
    ]
    return _layer().complete_sync(answer_model, messages, params={"temperature": 0, "max_tokens": 160}).text.strip()
