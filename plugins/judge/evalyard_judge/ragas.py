"""Ragas' summarization score, exactly as ragas computes it (see the plugin README).

Three judge steps: key phrases from the text -> closed questions whose answer in the
text is yes -> for each question, "1" when the summary can answer it, else "0". Then

- qa = #{answers a : a.lower() == "1"} / #answers (exact: "YES" or " 1" count as no);
- conciseness = 1 - min(len(summary), len(text)) / (len(text) + 1e-10), in characters,
  text being the context passages joined by newlines;
- score = qa * (1 - coeff) + conciseness * coeff with the length penalty (ragas' code
  weights conciseness by coeff; its documentation says the reverse, which agrees only at
  the default 0.5); without it, qa (ragas' SummaryScore) or, with ``compat: legacy``,
  qa * (1 - coeff) (the old SummarizationScore's halving).

No questions or no answers is a recorded error (ragas divides by zero), never a 0.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from evalyard import Case, JudgeError, PromptScorer, Score, Usage

from .base import JudgeScorer
from .templates import template_name

EPSILON = 1e-10


def qa_score(answers: list[str]) -> float:
    return sum(1 for answer in answers if answer.lower() == "1") / len(answers)


def conciseness_score(text: str, summary: str) -> float:
    return 1 - min(len(summary), len(text)) / (len(text) + EPSILON)


def combined_score(qa: float, conciseness: float, *, coeff: float, length_penalty: bool, compat: str) -> float:
    if length_penalty:
        return qa * (1 - coeff) + conciseness * coeff
    if compat == "legacy":
        return qa * (1 - coeff)
    return qa


class SummarizationScore(JudgeScorer):
    name = "summarization_score"
    description = ("Ragas summary score: share of the text's key yes-questions the summary answers, blended with "
                   "a conciseness bonus (coeff weights conciseness).")
    template_name = template_name("summarization_answers")
    requires = ("candidate", "context")
    version = "1"
    steps: ClassVar[tuple[str, ...]] = ("summarization_keyphrases", "summarization_questions",
                                       "summarization_answers")

    @dataclass
    class Config(PromptScorer.Config):
        coeff: float = field(default=0.5, metadata={"help": "weight of conciseness (0..1); qa gets 1 - coeff"})
        length_penalty: bool = field(default=True, metadata={"help": "blend in conciseness"})
        compat: Literal["current", "legacy"] = field(
            default="current", metadata={"help": "legacy: without length penalty, qa * (1 - coeff) as old ragas"})

        def __post_init__(self) -> None:
            super().__post_init__()
            if not 0 <= self.coeff <= 1:
                raise ValueError("coeff must be between 0 and 1")

    def required_fields(self) -> tuple[str, ...]:
        return self.requires

    def fingerprint_data(self) -> dict[str, Any]:
        data = super().fingerprint_data()
        data["steps"] = self.step_hashes(*self.steps)
        return data

    async def ascore(self, case: Case) -> Score:
        text = "\n".join(case.context)
        summary = case.candidate or ""
        if not text.strip():
            return Score.failure("the context is empty: there is no text to summarise")
        if not summary.strip():
            return Score.failure("the candidate summary is empty")
        runs = await asyncio.gather(*(self._one_sample(case, text, summary, n) for n in range(self.config.samples)))
        if len(runs) == 1:
            return runs[0]
        return _combine_samples(runs)

    async def _one_sample(self, case: Case, text: str, summary: str, sample: int) -> Score:
        details: dict[str, Any] = {"len_text": len(text), "len_summary": len(summary)}
        conciseness = conciseness_score(text, summary)
        details["conciseness_score"] = conciseness
        try:
            keyphrases, usage = await self.step("summarization_keyphrases", "keyphrases",
                                                Case(id=case.id, context=list(case.context)), sample)
            details["keyphrases"] = keyphrases = list(keyphrases)
            questions, usage = await self.step("summarization_questions", "questions",
                                               Case(id=case.id, context=list(case.context),
                                                    metadata={"keyphrases": keyphrases}), sample, usage)
            details["questions"] = questions = list(questions)
            if not questions:
                raise JudgeError("the judge wrote no questions from the text, so there is nothing to score "
                                 "(ragas divides by zero here)", usage=usage)
            answers, usage = await self.step("summarization_answers", "answers",
                                             Case(id=case.id, candidate=summary, metadata={"questions": questions}),
                                             sample, usage)
            details["answers"] = answers = list(answers)
            if not answers:
                raise JudgeError("the judge gave no answers to the questions (ragas divides by zero here)",
                                 usage=usage)
        except JudgeError as exc:
            return Score.failure(exc, **details)
        if len(answers) != len(questions):
            details["answer_count_mismatch"] = {"questions": len(questions), "answers": len(answers)}
        malformed = [a for a in answers if a not in ("0", "1")]
        if malformed:
            details["malformed_answers"] = len(malformed)
        config = self.config
        qa = qa_score(answers)
        details["qa_score"] = qa
        details.update(coeff=config.coeff, length_penalty=config.length_penalty, compat=config.compat)
        value = combined_score(qa, conciseness, coeff=config.coeff, length_penalty=config.length_penalty,
                               compat=config.compat)
        return Score(value=value, details=details, usage=usage.to_dict())


def _combine_samples(runs: list[Score]) -> Score:
    usage = sum((Usage.from_dict(r.usage) for r in runs), Usage()).to_dict()
    good = [r for r in runs if r.error is None]
    samples = [{"sample": n, "value": r.value, "error": r.error, **r.details} for n, r in enumerate(runs)]
    if not good:
        failure = Score.failure(runs[0].error or "no sample succeeded", samples=samples)
        failure.usage = usage
        return failure
    values = [r.value for r in good]
    mean = sum(values) / len(values)
    details = {"samples": samples, "answered": len(good), "vote": "mean",
               "spread": max(values) - min(values),
               "agreement": max(values.count(v) for v in values) / len(runs)}
    return Score(value=mean, details=details, usage=usage)


SCORERS = (SummarizationScore,)
