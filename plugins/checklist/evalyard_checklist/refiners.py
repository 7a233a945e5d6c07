"""Refiners of generated checklists: deduplicate, keep general items, filter, select.

Embeddings come from the embedding plugin's bundled model (all-MiniLM-L6-v2, offline) when that
plugin is installed, never from a hosted API; without it ``dedup=auto`` merges items whose
normalised text is equal, and the details say which method ran.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from .data import ChecklistItem
from .parsing import ReplyError


def _normalised(text: str) -> str:
    return re.sub(r"[^a-z0-9 ]+", "", text.lower()).strip()


def embed(texts: list[str]) -> list[list[float]] | None:
    """Unit-length sentence embeddings from the embedding plugin's bundled model, or None without it."""
    try:
        from evalyard_embedding import get_model, sentence_embeddings
    except ImportError:
        return None
    loaded = get_model("bundled")
    vectors = sentence_embeddings(loaded, texts)
    out = []
    for text in texts:
        vector = [float(x) for x in vectors[text].flatten().tolist()]
        norm = sum(x * x for x in vector) ** 0.5 or 1.0
        out.append([x / norm for x in vector])
    return out


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b))


def _groups(items: list[ChecklistItem], method: str, threshold: float) -> tuple[list[list[int]], str]:
    """Indices grouped by similarity: single-link over cosine >= threshold, or equal normalised text."""
    vectors = None
    if method in ("auto", "embedding"):
        vectors = embed([i.question for i in items])
        if vectors is None and method == "embedding":
            raise ValueError("dedup=embedding needs the evalyard-embedding plugin (pip install evalyard-embedding)")
    parent = list(range(len(items)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(items)):
        for j in range(i + 1, len(items)):
            same = (_cosine(vectors[i], vectors[j]) >= threshold if vectors is not None
                    else _normalised(items[i].question) == _normalised(items[j].question))
            if same:
                parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(items)):
        groups.setdefault(root(i), []).append(i)
    return sorted(groups.values()), ("embedding" if vectors is not None else "text")


async def deduplicate(generator: Any, items: list[ChecklistItem],
                      spent: list[Any]) -> tuple[list[ChecklistItem], dict[str, Any]]:
    """Merge each group of near-duplicates into one question written by the model; weight = the mean."""
    method = getattr(generator.config, "dedup", "off")
    if method == "off" or len(items) < 2:
        return items, {"method": "off" if method == "off" else method, "merged_groups": 0}
    groups, used = await asyncio.to_thread(_groups, items, method, generator.config.dedup_threshold)

    async def merge(group: list[int]) -> ChecklistItem:
        members = [items[i] for i in group]
        if len(members) == 1:
            return members[0]
        if used == "text":
            question = members[0].question
        else:
            value, _ = await generator.call("checklist/gen_feedback_merge", {"id": None},
                                            {"questions": [m.question for m in members]}, spent)
            question = value.get("question") if isinstance(value, dict) else None
            if not isinstance(question, str) or not question.strip():
                raise ReplyError("the merge reply has no question")
        sources = sorted({s for m in members for s in m.metadata.get("sources", [])})
        metadata = {**members[0].metadata, "merged_from": [m.question for m in members]}
        if sources:
            metadata["sources"] = sources
        return ChecklistItem(question.strip(), sum(m.weight for m in members) / len(members), members[0].category,
                             "", metadata)

    merged = list(await asyncio.gather(*(merge(g) for g in groups)))
    return merged, {"method": used, "merged_groups": sum(1 for g in groups if len(g) > 1)}


def _index_verdicts(value: Any, key: str) -> dict[int, bool]:
    rows = value.get("items") if isinstance(value, dict) else None
    verdicts = {}
    for row in rows or []:
        if isinstance(row, dict) and isinstance(row.get("index"), int) and isinstance(row.get(key), bool):
            verdicts[row["index"]] = row[key]
    return verdicts


async def tag_general(generator: Any, items: list[ChecklistItem],
                      spent: list[Any]) -> tuple[list[ChecklistItem], list[str]]:
    """Keep the items the model tags general; an item it gives no readable tag is dropped (as the original)."""
    if not items:
        return items, []
    value, _ = await generator.call("checklist/gen_feedback_tag", {"id": None},
                                    {"questions": [i.question for i in items]}, spent)
    verdicts = _index_verdicts(value, "general")
    kept = [item for n, item in enumerate(items) if verdicts.get(n) is True]
    return kept, [item.question for n, item in enumerate(items) if verdicts.get(n) is not True]


async def keep_passing(generator: Any, dimension: str, items: list[ChecklistItem],
                       spent: list[Any]) -> tuple[list[ChecklistItem], list[str]]:
    """CheckEval's filter: drop questions whose YES the model says does not mean better; unreadable -> kept."""
    if not items:
        return items, []
    value, _ = await generator.call("checklist/gen_checkeval_filter", {"id": None},
                                    {"dimension": dimension, "questions": [i.question for i in items]}, spent)
    verdicts = _index_verdicts(value, "keep")
    kept = [item for n, item in enumerate(items) if verdicts.get(n) is not False]
    return kept, [item.question for n, item in enumerate(items) if verdicts.get(n) is False]


async def select(generator: Any, items: list[ChecklistItem], observations: int) -> tuple[list[ChecklistItem], dict]:
    """Beam search for the subset (at most max_items) maximising
    alpha * coverage + (1 - alpha) * diversity - length_penalty * k, where coverage is the share of
    observations some selected item came from, and diversity 1 - mean pairwise cosine (embeddings) or
    1 - mean pairwise word overlap (without the embedding plugin)."""
    config = generator.config
    limit = generator.max_items
    vectors = await asyncio.to_thread(embed, [i.question for i in items]) if config.dedup != "text" else None
    words = [set(_normalised(i.question).split()) for i in items]

    def similarity(a: int, b: int) -> float:
        if vectors is not None:
            return _cosine(vectors[a], vectors[b])
        union = words[a] | words[b]
        return len(words[a] & words[b]) / len(union) if union else 1.0

    def objective(chosen: tuple[int, ...]) -> float:
        covered = {s for i in chosen for s in items[i].metadata.get("sources", [])}
        coverage = len(covered) / observations if observations else 0.0
        pairs = [(a, b) for n, a in enumerate(chosen) for b in chosen[n + 1:]]
        diversity = 1 - sum(similarity(a, b) for a, b in pairs) / len(pairs) if pairs else 1.0
        return config.alpha * coverage + (1 - config.alpha) * diversity - config.length_penalty * len(chosen)

    beam: list[tuple[int, ...]] = [()]
    best: tuple[int, ...] = ()
    best_value = float("-inf")
    for _ in range(limit):
        grown = {tuple(sorted(c + (i,))) for c in beam for i in range(len(items)) if i not in c}
        if not grown:
            break
        ranked = sorted(grown, key=lambda c: (-objective(c), c))
        beam = ranked[:config.beam]
        if objective(beam[0]) > best_value:
            best, best_value = beam[0], objective(beam[0])
    return [items[i] for i in best], {"from": len(items), "kept": len(best), "objective": best_value,
                                      "diversity": "embedding" if vectors is not None else "word overlap"}
