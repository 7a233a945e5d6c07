"""Ragas' statement metrics: texts split into statements (or claims), each checked against
passages, as ragas 0.4.3 computes them (see the plugin README, "Ragas' RAG metrics: statements").

- ``ragas/faithfulness``: the answer's statements, each judged inferable (1) or not (0) from the
  passages joined by newlines; value = #1 / #verdicts.
- ``ragas/context_recall``: the reference's sentences, each attributable (1) or not (0) to the
  joined passages; value = #1 / #classifications.
- ``ragas/factual_correctness``: the answer's claims checked against the reference (tp, fp) and,
  unless ``mode: precision``, the reference's claims against the answer (fn); precision, recall or
  F-beta, rounded to 2 places as ragas does.
- ``ragas/noise_sensitivity``: the share of the answer's statements that are wrong (not supported
  by the reference) yet supported by a relevant passage (``mode: relevant``) or only by irrelevant
  ones (``mode: irrelevant``); a passage is relevant when it supports a statement of the reference.

Faithfulness and noise sensitivity split the answer with the same template and input, and every
check uses one template (``ragas_statements_verdicts``): a step two metrics of one case share is
asked once, and the response cache serves it to the other.

Where ragas gives NaN or raises, the case's error is recorded (never a 0), and a case that cannot
score (an empty answer where statements are needed) is refused before any call.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Awaitable, ClassVar, Literal

from evalyard import Case, JudgeError, PromptScorer, Score, Usage

from ..base import JudgeScorer
from ..templates import template_name

STATEMENTS = "ragas_statements"
VERDICTS = "ragas_statements_verdicts"
CLAIMS = "ragas_factual_claims"
RECALL = "ragas_context_recall"
#: ragas' epsilon in factual correctness's precision and recall
EPSILON = 1e-8


class StatementJudge(JudgeScorer):
    """A multi-step ragas metric: each step asked once (``samples: 1``), as ragas does."""

    steps: ClassVar[tuple[str, ...]] = ()

    @dataclass
    class Config(PromptScorer.Config):
        def __post_init__(self) -> None:
            super().__post_init__()
            if self.samples != 1:
                raise ValueError("ragas' metrics ask each step once (samples: 1)")

    def required_fields(self) -> tuple[str, ...]:
        return tuple(self.requires)

    def fingerprint_data(self) -> dict[str, Any]:
        data = super().fingerprint_data()
        data["steps"] = self.step_hashes(*self.steps)
        return data

    async def ask(self, stem: str, key: str, case_id: str, metadata: dict[str, Any]) -> tuple[Any, Usage]:
        """One step's answer; its error names the step's template (two steps answer ``statements``)."""
        try:
            return await self.step(stem, key, Case(id=case_id, metadata=metadata))
        except JudgeError as exc:
            raise JudgeError(f"{stem}: {exc}", details=exc.details, usage=exc.usage) from None

    async def split(self, case_id: str, question: str, answer: str) -> tuple[list[str], Usage]:
        """The statements of ``answer`` (to ``question``)."""
        statements, usage = await self.ask(STATEMENTS, "statements", case_id, {"question": question, "answer": answer})
        return [str(s) for s in statements], usage

    async def check(self, case_id: str, context: str, statements: list[str]) -> tuple[list[dict[str, Any]], Usage]:
        """The judge's verdicts on ``statements`` against ``context``: ``{statement, verdict (0/1),
        reason}`` as the judge gave them (ragas counts the verdicts given, not the statements)."""
        answers, usage = await self.ask(VERDICTS, "statements", case_id, {"context": context, "statements": statements})
        return [{"statement": a["statement"], "verdict": 1 if a["verdict"] else 0, "reason": a["reason"]}
                for a in answers], usage


async def together(*steps: Awaitable[tuple[Any, Usage]]) -> tuple[list[Any], Usage]:
    """Steps asked at once: their answers in order and their usage summed; the first JudgeError,
    carrying every step's usage, when one has no answer."""
    results = await asyncio.gather(*steps, return_exceptions=True)
    usage, answers, failed = Usage(), [], None
    for result in results:
        if isinstance(result, JudgeError):
            usage = usage + (result.usage or Usage())
            failed = failed or result
        elif isinstance(result, BaseException):
            raise result
        else:
            answers.append(result[0])
            usage = usage + result[1]
    if failed is not None:
        raise JudgeError(str(failed), details=failed.details, usage=usage)
    return answers, usage


def share_supported(verdicts: list[dict[str, Any]], key: str = "verdict") -> float:
    return sum(v[key] for v in verdicts) / len(verdicts)


class Faithfulness(StatementJudge):
    name = "faithfulness"
    description = ("Ragas faithfulness: share of the answer's statements the judge finds inferable from the "
                   "context passages (joined); statements and verdicts in details.")
    template_name = template_name(VERDICTS)
    requires = ("input", "candidate", "context")
    steps = (STATEMENTS, VERDICTS)

    async def ascore(self, case: Case) -> Score:
        if not (case.candidate or "").strip():
            return Score.failure("the answer is empty: it has no statements to check (ragas gives NaN)")
        details: dict[str, Any] = {}
        try:
            statements, usage = await self.split(case.id, case.input or "", case.candidate)
            details["statements"] = statements
            if not statements:
                raise JudgeError("the judge found no statements in the answer (ragas gives NaN)", usage=usage)
            verdicts, more = await self.check(case.id, "\n".join(case.context), statements)
            usage = usage + more
        except JudgeError as exc:
            return Score.failure(exc, **details)
        details["verdicts"] = verdicts
        if not verdicts:
            return Score(value=None, error="the judge gave no verdicts (ragas gives NaN)", details=details,
                         usage=usage.to_dict())
        if len(verdicts) != len(statements):
            details["verdict_count_mismatch"] = {"statements": len(statements), "verdicts": len(verdicts)}
        return Score(value=share_supported(verdicts), details=details, usage=usage.to_dict())


class ContextRecall(StatementJudge):
    name = "context_recall"
    description = ("Ragas context recall (LLMContextRecall): share of the reference's sentences the judge "
                   "attributes to the retrieved passages (joined); classifications in details.")
    template_name = template_name(RECALL)
    requires = ("input", "reference", "context")
    steps = (RECALL,)

    @staticmethod
    def step_case(case: Case) -> Case:
        return Case(id=case.id, metadata={"question": case.input or "", "context": "\n".join(case.context),
                                          "reference": case.reference})

    def planned_requests(self, case: Case) -> list[Any]:
        """Its one request, as ``step`` asks it (none for a case refused before any call)."""
        if not (case.reference or "").strip():
            return []
        return self.planned_judge(self.step_case(case), template=self.step_template(RECALL), answer=None,
                                  reasoning=False, structured=True, logprobs=False, samples=1)

    async def ascore(self, case: Case) -> Score:
        if not (case.reference or "").strip():
            return Score.failure("the reference is empty: it has no sentences to attribute (ragas gives NaN)")
        try:
            answers, usage = await self.ask(RECALL, "classifications", case.id, self.step_case(case).metadata)
        except JudgeError as exc:
            return Score.failure(exc)
        classifications = [{"statement": a["statement"], "attributed": 1 if a["attributed"] else 0,
                            "reason": a["reason"]} for a in answers]
        details = {"classifications": classifications}
        if not classifications:
            return Score(value=None, error="the judge classified no sentence of the reference (ragas gives NaN)",
                         details=details, usage=usage.to_dict())
        return Score(value=share_supported(classifications, "attributed"), details=details, usage=usage.to_dict())


def fbeta(tp: int, fp: int, fn: int, beta: float) -> float:
    """ragas' F-beta: 0 when precision and recall are both 0 (or undefined)."""
    precision = tp / (tp + fp) if tp + fp else 0
    recall = tp / (tp + fn) if tp + fn else 0
    if precision == 0 and recall == 0:
        return 0.0
    return (1 + beta ** 2) * precision * recall / (beta ** 2 * precision + recall)


def round2(value: float) -> float:
    """numpy's ``round(x, 2)`` (x * 100 rounded half to even, / 100), which ragas applies: it differs
    from Python's ``round(x, 2)`` on values such as 0.015."""
    return round(value * 100) / 100


class FactualCorrectness(StatementJudge):
    name = "factual_correctness"
    description = ("Ragas factual correctness: the answer's claims checked against the reference (and the "
                   "reference's against the answer): precision, recall or F-beta of the claims, rounded to 2 places.")
    template_name = template_name(VERDICTS)
    requires = ("candidate", "reference")
    steps = (CLAIMS, VERDICTS)

    @dataclass
    class Config(StatementJudge.Config):
        mode: Literal["precision", "recall", "f1"] = field(default="f1", metadata={
            "help": "precision: the answer's claims the reference supports; recall: the reference's claims the "
                    "answer supports; f1: their F-beta"})
        beta: float = field(default=1.0, metadata={"help": "F-beta's beta (above 1 weighs recall more)"})
        atomicity: Literal["low", "high"] = field(default="low", metadata={
            "help": "high: one fact per claim; low: a claim may hold a whole sentence"})
        coverage: Literal["low", "high"] = field(default="low", metadata={
            "help": "high: claims keep every detail; low: only the main facts"})

        def __post_init__(self) -> None:
            super().__post_init__()
            if self.beta <= 0:
                raise ValueError("beta must be above 0")

    async def claims_checked(self, case_id: str, text: str, premise: str) -> tuple[dict[str, Any], Usage]:
        """The claims of ``text`` and their verdicts against ``premise``; no claims, no check (ragas
        asks the judge about an empty list, whose verdicts can only be none)."""
        config = self.config
        claims, usage = await self.ask(CLAIMS, "claims", case_id, {
            "text": text, "atomicity": config.atomicity, "coverage": config.coverage})
        claims = [str(c) for c in claims]
        verdicts: list[dict[str, Any]] = []
        if claims:
            verdicts, more = await self.check(case_id, premise, claims)
            usage = usage + more
        return {"claims": claims, "verdicts": verdicts}, usage

    async def ascore(self, case: Case) -> Score:
        answer, reference, mode = case.candidate or "", case.reference or "", self.config.mode
        steps = [self.claims_checked(case.id, answer, reference)]
        if mode != "precision":
            steps.append(self.claims_checked(case.id, reference, answer))
        try:
            checked, usage = await together(*steps)
        except JudgeError as exc:
            return Score.failure(exc)
        details: dict[str, Any] = {"answer_claims": checked[0]["claims"], "answer_verdicts": checked[0]["verdicts"]}
        answer_verdicts = [v["verdict"] for v in checked[0]["verdicts"]]
        tp, fp = sum(answer_verdicts), answer_verdicts.count(0)
        fn = 0
        if mode != "precision":
            details.update(reference_claims=checked[1]["claims"], reference_verdicts=checked[1]["verdicts"])
            fn = [v["verdict"] for v in checked[1]["verdicts"]].count(0)
        if mode == "precision":
            value = tp / (tp + fp + EPSILON)
        elif mode == "recall":
            value = tp / (tp + fn + EPSILON)
        else:
            value = fbeta(tp, fp, fn, self.config.beta)
        details.update(tp=tp, fp=fp, fn=fn, mode=mode, beta=self.config.beta)
        return Score(value=round2(value), details=details, usage=usage.to_dict())


class NoiseSensitivity(StatementJudge):
    name = "noise_sensitivity"
    description = ("Ragas noise sensitivity (lower is better): share of the answer's statements that the reference "
                   "does not support but a relevant passage does (mode relevant) or only irrelevant ones do (mode "
                   "irrelevant); per-passage verdicts in details.")
    template_name = template_name(VERDICTS)
    requires = ("input", "candidate", "reference", "context")
    higher_is_better = False
    steps = (STATEMENTS, VERDICTS)

    @dataclass
    class Config(StatementJudge.Config):
        mode: Literal["relevant", "irrelevant"] = field(default="relevant", metadata={
            "help": "relevant: wrong statements a relevant passage supports; irrelevant: wrong statements only "
                    "irrelevant passages support"})

    async def ascore(self, case: Case) -> Score:
        empty = next((name for name in ("input", "candidate", "reference") if not getattr(case, name)), None)
        if empty:  # ragas refuses these before any call too
            return Score.failure(f"the case's {empty} is empty (ragas raises)")
        details: dict[str, Any] = {}
        try:
            (reference_statements, statements), usage = await together(
                self.split(case.id, case.input, case.reference), self.split(case.id, case.input, case.candidate))
            details.update(reference_statements=reference_statements, answer_statements=statements)
            if not reference_statements:
                raise JudgeError("the judge found no statements in the reference (ragas raises)", usage=usage)
            if not statements:
                raise JudgeError("the judge found no statements in the answer (ragas gives NaN)", usage=usage)
            passages = list(case.context)
            checks, more = await together(*(self.check(case.id, p, reference_statements) for p in passages),
                                          *(self.check(case.id, p, statements) for p in passages),
                                          self.check(case.id, case.reference, statements))
            usage = usage + more
        except JudgeError as exc:
            return Score.failure(exc, **details)
        n = len(passages)
        by_passage = [{"passage": j, "reference_verdicts": checks[j], "answer_verdicts": checks[n + j]}
                      for j in range(n)]
        details.update(passages=by_passage, answer_vs_reference=checks[-1])
        miscounted = next((f"passage {j}" for j, p in enumerate(by_passage)
                           if len(p["reference_verdicts"]) != len(reference_statements)
                           or len(p["answer_verdicts"]) != len(statements)), None)
        if miscounted is None and len(checks[-1]) != len(statements):
            miscounted = "the reference"
        if miscounted:
            return Score(value=None, error=f"the judge's verdicts against {miscounted} do not match the statements "
                         "one for one (ragas raises or misaligns them)", details=details, usage=usage.to_dict())
        value = noise(by_passage, checks[-1], self.config.mode, details)
        return Score(value=value, details=details, usage=usage.to_dict())


def noise(passages: list[dict[str, Any]], against_reference: list[dict[str, Any]], mode: str,
          details: dict[str, Any]) -> float:
    """ragas' noise sensitivity from the verdicts: a passage is relevant when it supports a statement
    of the reference; a statement of the answer is wrong when the reference does not support it."""
    for p in passages:
        p["relevant"] = any(v["verdict"] for v in p["reference_verdicts"])
    counted = []
    for i, checked in enumerate(against_reference):
        by_relevant = any(p["relevant"] and p["answer_verdicts"][i]["verdict"] for p in passages)
        by_irrelevant = any(not p["relevant"] and p["answer_verdicts"][i]["verdict"] for p in passages)
        wrong = not checked["verdict"]
        # ragas keeps the two apart: a statement a relevant passage supports is never counted as noise
        counted.append(wrong and (by_relevant if mode == "relevant" else by_irrelevant and not by_relevant))
    details["counted_statements"] = [i for i, c in enumerate(counted) if c]
    return sum(counted) / len(counted)


SCORERS = (Faithfulness, ContextRecall, FactualCorrectness, NoiseSensitivity)
