"""Ragas' metrics of the retrieved passages (ragas 0.4.3), judged through the judge service.

- ``ragas/context_precision`` (LLMContextPrecisionWithReference) and
  ``ragas/context_precision_without_reference`` (LLMContextPrecisionWithoutReference): one
  verdict per passage, in rank order, from one template (``judge/ragas_context_precision``, as
  Ragas uses one prompt for both): was the passage useful in arriving at the answer (the
  reference, or the response)? A verdict is useful when its integer is not 0 (Ragas'
  ``1 if verdict else 0``). The value is the average precision over the useful passages:
  sum over useful ranks k of (useful in the first k) / k, divided by the number useful; 0 when
  none is. Ragas divides by the number useful plus 1e-10, so its values are within 1e-9.
- ``ragas/context_entity_recall`` (ContextEntityRecall): the entities of the reference and of the
  passages (joined by newlines), one call each with one template; the value is the share of the
  reference's distinct entities that are among the passages' (exact strings, as Ragas' set
  intersection); 0 when the reference names none (Ragas: 0 / (0 + 1e-8)).

The passages are the case's ranking in trec_eval's order (``ranked_passages`` of ``retrieved``
when every passage has text, as the retrieval plugin and the report rank them), else its
``context`` in its own order: Ragas takes ``retrieved_contexts`` as given, so it is handed them
in this order. An unreadable verdict or entity list is the case's error (Ragas raises after its
format-fixing calls), with the verdicts read so far in details.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from evalyard import Case, PromptScorer, Score, Usage, ranked_passages

from ..base import JudgeScorer
from ..templates import template_name

REASON_LIMIT = 600


def passage_texts(case: Case) -> list[str]:
    """The passages the metrics judge, in rank order (see the module's doc)."""
    retrieved = case.retrieved
    if retrieved and all(p.get("text") is not None for p in retrieved):
        return [p["text"] for p in ranked_passages(retrieved)]
    return list(case.context or [])


def plan_of(scorer: PromptScorer, asks: list[tuple[Case, str]]) -> list[Any]:
    """The first requests of ``asks`` (a case and a template stem each), rendered as they are sent."""
    return [request for case, stem in asks
            for request in scorer.planned_judge(case, template=scorer.step_template(stem), answer=None,
                                                reasoning=False, structured=False, logprobs=False, samples=1)]


def verdict_value(verdict: Any) -> int | None:
    """A verdict as Ragas' pydantic ``int`` field reads it: an integer, true/false, a float with no
    fraction, or a text of one ("1", " 0 ", "1.0"); None for anything else."""
    if isinstance(verdict, bool):
        return int(verdict)
    if isinstance(verdict, int):
        return verdict
    if isinstance(verdict, float):
        return int(verdict) if verdict.is_integer() else None
    if isinstance(verdict, str):
        text = verdict.strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            number = float(text)
        except ValueError:
            return None
        return int(number) if number.is_integer() else None
    return None


def average_precision(useful: list[int]) -> float:
    """Ragas' average precision of 0/1 verdicts in rank order; 0 when none is useful."""
    found, total = 0, 0.0
    for rank, hit in enumerate(useful, start=1):
        if hit:
            found += 1
            total += found / rank
    return total / found if found else 0.0


class RagasJudge(JudgeScorer):
    """A judge of this family: every step asked once (samples 1), as Ragas asks it."""

    steps: tuple[str, ...] = ()

    @dataclass
    class Config(PromptScorer.Config):
        def __post_init__(self) -> None:
            super().__post_init__()
            if self.samples != 1 or self.logprobs:
                raise ValueError("each step is asked once, as Ragas does (samples: 1, no logprobs)")

    def required_fields(self) -> tuple[str, ...]:
        return self.requires

    def fingerprint_data(self) -> dict[str, Any]:
        data = super().fingerprint_data()
        if self.steps:
            data["steps"] = self.step_hashes(*self.steps)
        return data


class ContextPrecision(RagasJudge):
    name = "context_precision"
    description = ("Ragas' LLM context precision with reference: each retrieved passage judged useful or not for "
                   "reaching the reference answer; the average precision of the useful ones in rank order.")
    template_name = template_name("ragas_context_precision")
    requires = ("input", "reference", "context")
    reads = ("retrieved",)
    threshold = 0.5
    version = "1"

    def answer_of(self, case: Case) -> str:
        return case.reference or ""

    def asks(self, case: Case) -> list[Case]:
        answer = self.answer_of(case)
        return [Case(id=case.id, input=case.input, metadata={"answer": answer, "passage": passage})
                for passage in passage_texts(case)]

    async def ascore(self, case: Case) -> Score:
        asks = self.asks(case)
        # every passage at once: Ragas asks them one by one and stops at an unreadable one
        judgements = await asyncio.gather(*(self.judge(ask, answer=None, reasoning=False, structured=True,
                                                       logprobs=False, samples=1) for ask in asks))
        usage, verdicts, reasons, error = Usage(), [], [], None
        for rank, judgement in enumerate(judgements, start=1):
            usage = usage + judgement.usage
            if error is not None:
                continue
            answer = judgement.answer if judgement.error is None else None
            value = verdict_value(answer.get("verdict")) if isinstance(answer, dict) else None
            if value is None:
                error = (f"passage {rank}: {judgement.error or 'unreadable verdict ' + repr(answer.get('verdict'))}"
                         " (Ragas raises)")
                continue
            verdicts.append(1 if value else 0)
            reasons.append(str(answer.get("reason", ""))[:REASON_LIMIT])
        details: dict[str, Any] = {"verdicts": verdicts, "reasons": reasons, "passages": len(asks)}
        if error is not None:
            return Score(value=None, error=error, details=details, usage=usage.to_dict())
        details["useful"] = sum(verdicts)
        return Score(value=average_precision(verdicts), details=details, usage=usage.to_dict())

    def planned_requests(self, case: Case) -> list[Any] | None:
        return [r for ask in self.asks(case) for r in self.planned_judge(ask, answer=None, reasoning=False,
                                                                         structured=True, logprobs=False, samples=1)]


class ContextPrecisionWithoutReference(ContextPrecision):
    name = "context_precision_without_reference"
    description = ("Ragas' LLM context precision without reference: each retrieved passage judged useful or not for "
                   "reaching the response; the average precision of the useful ones in rank order.")
    requires = ("input", "candidate", "context")

    def answer_of(self, case: Case) -> str:
        return case.candidate or ""


class ContextEntityRecall(RagasJudge):
    name = "context_entity_recall"
    description = ("Ragas' context entity recall: the share of the reference's entities (listed by the judge) that "
                   "are among the entities of the retrieved passages.")
    template_name = template_name("ragas_entities")
    requires = ("reference", "context")
    reads = ("retrieved",)
    threshold = 0.5
    version = "1"

    def texts(self, case: Case) -> tuple[str, str]:
        return case.reference or "", "\n".join(passage_texts(case))

    def asks(self, case: Case) -> list[Case]:
        return [Case(id=case.id, metadata={"text": text}) for text in self.texts(case)]

    async def ascore(self, case: Case) -> Score:
        judgements = await asyncio.gather(*(self.judge(ask, answer=None, reasoning=False, structured=True,
                                                       logprobs=False, samples=1) for ask in self.asks(case)))
        usage = sum((j.usage for j in judgements), Usage())
        lists = []
        for of, judgement in zip(("reference", "passages"), judgements):
            if judgement.error is not None:
                return Score(value=None, error=f"entities of the {of}: {judgement.error} (Ragas raises)",
                             details=judgement.details, usage=usage.to_dict())
            lists.append(list(judgement.answer["entities"]))
        of_reference, of_passages = lists
        recalled = set(of_reference) & set(of_passages)
        details = {"reference_entities": of_reference, "context_entities": of_passages,
                   "recalled": sorted(recalled)}
        # over the reference's list as the judge wrote it, repeats included, as Ragas divides
        value = len(recalled) / len(of_reference) if of_reference else 0.0
        return Score(value=value, details=details, usage=usage.to_dict())

    def planned_requests(self, case: Case) -> list[Any] | None:
        return [r for ask in self.asks(case) for r in self.planned_judge(ask, answer=None, reasoning=False,
                                                                         structured=True, logprobs=False, samples=1)]


SCORERS = (ContextPrecision, ContextPrecisionWithoutReference, ContextEntityRecall)
