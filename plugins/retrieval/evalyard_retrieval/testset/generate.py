"""Questions with reference answers from chunks of a team's documents.

Three kinds of model call, each through the judge service (so the response cache makes a rerun
free and an interrupted one resumes where it stopped):

1. single-hop: one chunk -> {"question", "answer"} in a query style;
2. multi-hop: two related chunks (they share rare terms) -> a question needing both;
3. check: each kept question, its answer and its chunks -> {"reason", "answerable"}.

Which chunks, pairs and styles are asked is decided before any call, from the seed, so the plan
(``--plan``) names exactly the generation calls a run makes. Near-duplicate questions (same
words, or a word-set Jaccard similarity at or above ``similarity``) are dropped before the check.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from dataclasses import dataclass
from random import Random
from typing import Any

from evalyard import Case

from .documents import Chunk

#: Query styles: name -> the instruction the question template is given.
STYLES = {
    "formal": "Write the question as a complete, grammatical sentence.",
    "casual": "Write the question the way someone types it quickly into a chat: informal and lower case.",
    "search": "Write the question as a short search-engine query of a few keywords, not a full sentence.",
    "misspelled": "Write the question as a full sentence with one or two realistic spelling mistakes.",
}
#: Words too common to make two chunks related.
_STOP = frozenset("""about above after again against because before being below between both could does doing
during each from further have having here into itself just more most other over same should some such than that
their theirs them then there these they this those through under until very what when where which while whom
with would your yours also only used uses using will been were with within without make makes made like can
one two the and for are not you but all any our out its""".split())
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_\-]{3,}")


@dataclass
class Options:
    size: int = 20
    multi_hop: float = 0.25
    styles: tuple[str, ...] = tuple(STYLES)
    seed: int = 0
    min_words: int = 30
    similarity: float = 0.8
    check: bool = True
    keep_unanswerable: bool = False
    temperature: float = 0.7


@dataclass
class Item:
    """One question to ask for: its chunks, style and (multi-hop) the terms its chunks share."""

    id: str
    kind: str  # single_hop | multi_hop
    chunks: tuple[Chunk, ...]
    style: str
    shared: tuple[str, ...] = ()
    question: str | None = None
    answer: str | None = None
    error: str | None = None
    answerable: bool | None = None
    check_reason: str | None = None
    dropped: str | None = None  # why it is not in the test set (duplicate, unanswerable)

    def prompt_case(self) -> Case:
        return Case(id=self.id, context=[c.text for c in self.chunks],
                    metadata={"style": self.style, "style_note": STYLES[self.style], "shared": list(self.shared)})

    def check_case(self) -> Case:
        return Case(id=self.id, input=self.question, reference=self.answer, context=[c.text for c in self.chunks])

    def record(self, models: dict[str, str]) -> dict[str, Any]:
        """The case as written to the test set (``relevant`` and ``reference_contexts`` are what
        the retrieval scorers and Ragas' context metrics read)."""
        meta: dict[str, Any] = {"kind": self.kind, "style": self.style, "sources": sorted({c.source for c in
                                                                                            self.chunks}), **models}
        if self.answerable is not None:
            meta.update(answerable=self.answerable, check_reason=self.check_reason)
        return {"id": self.id, "input": self.question, "reference": self.answer,
                "relevant": [c.id for c in self.chunks], "reference_contexts": [c.text for c in self.chunks],
                "metadata": {"testset": meta}}


def _terms(chunk: Chunk) -> set[str]:
    return {w.lower() for w in _WORD.findall(chunk.text)} - _STOP


def related_pairs(chunks: list[Chunk], limit: int) -> list[tuple[Chunk, Chunk, tuple[str, ...]]]:
    """Up to ``limit`` pairs of chunks that share rare terms, best first (the shared terms' summed
    inverse document frequency), each chunk in at most two pairs; chunks next to each other in
    one file are skipped (a question spanning them is not multi-hop in any useful sense)."""
    import math

    terms = [_terms(c) for c in chunks]
    df = Counter(t for ts in terms for t in ts)
    n = len(chunks)
    scored = []
    for i in range(n):
        for j in range(i + 1, n):
            a, b = chunks[i], chunks[j]
            if a.source == b.source and abs(_position(a) - _position(b)) <= 1:
                continue
            shared = [t for t in terms[i] & terms[j] if 1 < df[t] <= max(2, n // 10)]
            if len(shared) < 2:
                continue
            weight = sum(math.log(n / df[t]) for t in shared)
            scored.append((weight, i, j, tuple(sorted(shared, key=lambda t: (df[t], t))[:5])))
    scored.sort(key=lambda s: (-s[0], s[1], s[2]))
    used: Counter[int] = Counter()
    out = []
    for _, i, j, shared in scored:
        if len(out) >= limit:
            break
        if used[i] >= 2 or used[j] >= 2:
            continue
        used[i] += 1
        used[j] += 1
        out.append((chunks[i], chunks[j], shared))
    return out


def _position(chunk: Chunk) -> int:
    return int(chunk.id.rpartition("#")[2])


_PROSE_WORD = re.compile(r"^[(\"'“]?[A-Za-z][a-z'’-]*[)\"'”]?[.,;:!?]?$")


def is_prose(text: str) -> bool:
    """Mostly words (at least half of its tokens): code, tables and command output make poor
    questions, so such chunks get none (they stay in the chunk file for the retriever)."""
    tokens = text.split()
    return bool(tokens) and sum(1 for t in tokens if _PROSE_WORD.match(t)) >= 0.5 * len(tokens)


def plan_items(chunks: list[Chunk], options: Options) -> list[Item]:
    """The questions to ask for, decided from the seed alone (chunks of prose with ``min_words``
    words or more): ``size`` in all, a ``multi_hop``
    share of them from related pairs (fewer when the documents have fewer pairs), the rest one
    chunk each (chunks drawn without repeats while any is left; then again, in another style)."""
    eligible = [c for c in chunks if c.words >= options.min_words and is_prose(c.text)]
    if not eligible:
        return []
    rng = Random(options.seed)
    wanted_multi = round(options.size * options.multi_hop) if len(eligible) > 1 else 0
    pairs = related_pairs(eligible, wanted_multi)
    items: list[Item] = []
    for a, b, shared in pairs:
        items.append(Item(id="", kind="multi_hop", chunks=(a, b), style=rng.choice(options.styles), shared=shared))
    order: list[Chunk] = []
    while len(items) + len(order) < options.size:
        round_ = list(eligible)
        rng.shuffle(round_)
        order.extend(round_[:options.size - len(items) - len(order)])
    for chunk in order:
        items.append(Item(id="", kind="single_hop", chunks=(chunk,), style=rng.choice(options.styles)))
    items.sort(key=lambda it: (it.chunks[0].id, it.kind, it.chunks[-1].id))
    for n, item in enumerate(items, 1):
        item.id = f"q{n:04d}"
    return items


def _normal_words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def drop_duplicates(items: list[Item], similarity: float) -> None:
    """Mark later questions that repeat an earlier one (same words, or Jaccard >= similarity)."""
    kept: list[tuple[str, set[str]]] = []
    for item in items:
        if item.question is None:
            continue
        bag = set(_normal_words(item.question))
        for other_id, other in kept:
            if bag == other or (bag and len(bag & other) / len(bag | other) >= similarity):
                item.dropped = f"duplicate of {other_id}"
                break
        else:
            kept.append((item.id, bag))


async def generate(items: list[Item], judges: dict[str, Any], options: Options, concurrency: int) -> None:
    """Ask for every item's question, drop duplicates, then check the rest (in place)."""
    slots = asyncio.Semaphore(max(1, concurrency))

    async def write(item: Item) -> None:
        async with slots:
            judgement = await judges[item.kind].ask(item.prompt_case())
        if judgement.error is not None:
            item.error = judgement.error
            return
        answer = judgement.answer or {}
        question, reply = answer.get("question"), answer.get("answer")
        if not isinstance(question, str) or not question.strip() or not isinstance(reply, str) or not reply.strip():
            item.error = f"the model wrote no question or no answer: {judgement.raw!r:.120}"
            return
        item.question, item.answer = question.strip(), reply.strip()

    async def check(item: Item) -> None:
        async with slots:
            judgement = await judges["check"].ask(item.check_case())
        if judgement.error is not None:
            item.error = f"check: {judgement.error}"
            return
        verdict = (judgement.answer or {}).get("answerable")
        if not isinstance(verdict, bool):
            item.error = f"check: the judge gave no true/false verdict: {judgement.raw!r:.120}"
            return
        item.answerable, item.check_reason = verdict, str((judgement.answer or {}).get("reason", ""))
        if not verdict and not options.keep_unanswerable:
            item.dropped = "not answerable from its chunks (check)"

    await asyncio.gather(*(write(item) for item in items))
    drop_duplicates(items, options.similarity)
    if options.check:
        await asyncio.gather(*(check(item) for item in items
                               if item.question is not None and item.dropped is None))
