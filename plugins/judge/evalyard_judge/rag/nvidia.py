"""Ragas' NVIDIA metrics (ragas 0.4.3, ``_nv_metrics.py``): two judge templates each, averaged.

- ``ragas/answer_accuracy``: the answer against the reference, rated 4 / 2 / 0 by two templates
  (the second shows the reference first); each rating read as Ragas reads it: the first of
  "0", "1", "2", "3", "4" found anywhere in the reply, divided by 4.
- ``ragas/context_relevance``: the passages (joined by newlines) against the question, rated 2 / 1
  / 0; read as the first of "2", "1", "0" found in the reply, divided by 2.
- ``ragas/response_groundedness``: the answer against the passages, rated and read likewise.

Each template is asked up to ``attempts`` times (Ragas' ``retry = 5``), each attempt a sample
of its own (the cache keeps each), until a reply holds a rating. The value is the mean of the
two ratings; as Ragas' ``average_scores`` (``max(score0, score1)`` with NaN): when the second
template never gave a rating, the first one's rating; when the first never did, no value (an
error). A failed call is an error (Ragas turns any exception into NaN).

Ragas' shortcuts are kept, before any call: context_relevance is 0 for a blank question or
blank passages, or when the passages equal or are contained in the question; groundedness is 0
for a blank answer or blank passages and 1 when the answer equals or is contained in them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, ClassVar

from evalyard import Case, Score, Usage

from ..templates import template_name
from .passages import RagasJudge, plan_of

#: How much of a reply the details keep.
REPLY_LIMIT = 300


def first_rating(reply: str, order: tuple[int, ...], scale: int) -> float | None:
    """Ragas' reading: the first of ``order``'s digits found anywhere in the reply, over ``scale``."""
    for rating in order:
        if str(rating) in reply:
            return rating / scale
    return None


class NvidiaJudge(RagasJudge):
    """Two templates, each asked until it gives a rating (``attempts`` at most), averaged."""

    #: the file stems of the two templates, in Ragas' order
    steps: ClassVar[tuple[str, str]] = ("", "")
    #: the digits looked for in a reply, in the order Ragas looks, and the scale they divide by
    order: ClassVar[tuple[int, ...]] = (2, 1, 0)
    scale: ClassVar[int] = 2
    threshold = 0.5

    @dataclass
    class Config(RagasJudge.Config):
        attempts: int = field(default=5, metadata={
            "help": "how many times each template is asked until its reply holds a rating (Ragas' retry)"})

        def __post_init__(self) -> None:
            super().__post_init__()
            if self.attempts < 1:
                raise ValueError("attempts must be at least 1")
            if self.structured:
                raise ValueError("the NVIDIA metrics read a free-text rating, as Ragas does (no structured answer)")

    def shortcut(self, case: Case, joined: str) -> tuple[float, str] | None:
        """Ragas' value for a case it scores without asking, and why; None to ask."""
        return None

    def judged(self, case: Case) -> Case:
        return Case(id=case.id, input=case.input, candidate=case.candidate, reference=case.reference,
                    context=list(case.context))

    async def ascore(self, case: Case) -> Score:
        judged = self.judged(case)
        known = self.shortcut(judged, "\n".join(judged.context))
        if known is not None:
            value, why = known
            return Score(value=value, details={"shortcut": why}, usage=Usage().to_dict())
        first, second = await asyncio.gather(*(self.rating(judged, stem) for stem in self.steps))
        usage = first[2] + second[2]
        details = {"ratings": [first[1], second[1]]}
        error = first[1].get("error") or second[1].get("error")
        if error:
            return Score(value=None, error=error, details=details, usage=usage.to_dict())
        if first[0] is None:
            return Score(value=None, error=f"{self.steps[0]}: no rating in {self.config.attempts} replies "
                                           "(Ragas gives NaN)", details=details, usage=usage.to_dict())
        if second[0] is None:  # Ragas' max(score0, NaN) is score0
            return Score(value=first[0], details={**details, "only": self.steps[0]}, usage=usage.to_dict())
        return Score(value=(first[0] + second[0]) / 2, details=details, usage=usage.to_dict())

    async def rating(self, case: Case, stem: str) -> tuple[float | None, dict[str, Any], Usage]:
        """(rating or None, what was asked and answered, usage): attempt after attempt, each its own sample."""
        usage, replies = Usage(), []
        for attempt in range(self.config.attempts):
            judgement = await self.judge(case, template=self.step_template(stem), answer=None, reasoning=False,
                                         structured=False, logprobs=False, samples=1, first_sample=attempt)
            usage = usage + judgement.usage
            if judgement.error is not None:  # a failed call: Ragas' except gives NaN for the case
                return None, {"template": stem, "replies": replies, "error": f"{stem}: {judgement.error}"}, usage
            reply = judgement.raw or ""
            replies.append(reply[:REPLY_LIMIT])
            value = first_rating(reply, self.order, self.scale)
            if value is not None:
                return value, {"template": stem, "replies": replies, "rating": value}, usage
        return None, {"template": stem, "replies": replies, "rating": None}, usage

    def planned_requests(self, case: Case) -> list[Any] | None:
        judged = self.judged(case)
        if self.shortcut(judged, "\n".join(judged.context)) is not None:
            return []
        return plan_of(self, [(judged, stem) for stem in self.steps])


class AnswerAccuracy(NvidiaJudge):
    name = "answer_accuracy"
    description = ("Ragas' NVIDIA answer accuracy: the answer rated against the reference (4/2/0) by two "
                   "templates, the mean of the two ratings over 4.")
    template_name = template_name("ragas_nv_accuracy_1")
    requires = ("input", "candidate", "reference")
    steps = ("ragas_nv_accuracy_1", "ragas_nv_accuracy_2")
    order = (0, 1, 2, 3, 4)
    scale = 4
    version = "1"

    def judged(self, case: Case) -> Case:  # the passages play no part
        return Case(id=case.id, input=case.input, candidate=case.candidate, reference=case.reference)


class ContextRelevance(NvidiaJudge):
    name = "context_relevance"
    description = ("Ragas' NVIDIA context relevance: the retrieved passages rated against the question (2/1/0) "
                   "by two templates, the mean of the two ratings over 2.")
    template_name = template_name("ragas_nv_relevance_1")
    requires = ("input", "context")
    reads = ("retrieved",)
    steps = ("ragas_nv_relevance_1", "ragas_nv_relevance_2")
    version = "1"

    def shortcut(self, case: Case, joined: str) -> tuple[float, str] | None:
        question, passages = (case.input or "").strip(), joined.strip()
        if not question or not passages:
            return 0.0, "blank question or passages (Ragas scores 0)"
        if passages == question or passages in question:
            return 0.0, "the passages are the question, or inside it (Ragas scores 0)"
        return None


class ResponseGroundedness(NvidiaJudge):
    name = "response_groundedness"
    description = ("Ragas' NVIDIA response groundedness: the answer rated against the retrieved passages (2/1/0) "
                   "by two templates, the mean of the two ratings over 2.")
    template_name = template_name("ragas_nv_groundedness_1")
    requires = ("candidate", "context")
    reads = ("retrieved",)
    steps = ("ragas_nv_groundedness_1", "ragas_nv_groundedness_2")
    version = "1"

    def shortcut(self, case: Case, joined: str) -> tuple[float, str] | None:
        answer, passages = (case.candidate or "").strip(), joined.strip()
        if not answer or not passages:
            return 0.0, "blank answer or passages (Ragas scores 0)"
        if answer in passages:
            return 1.0, "the answer is the passages, or inside them (Ragas scores 1)"
        return None


SCORERS = (AnswerAccuracy, ContextRelevance, ResponseGroundedness)
