"""Arthur Bench's prompt-based scorers, with its bugs fixed.

- ``qa_correctness``: ``cannot_tell`` is a label of its own with no value (Arthur folded
  its ``NA`` into an ``invalid`` -1 that was averaged in);
- ``summary_quality``: judged in both orders (Arthur always showed the reference first);
- ``hallucination``: the response split into claims and each claim checked against the
  context by the judge model through the model layer (Arthur called a hosted service).
  Polarity: value 1 = at least one claim unsupported (hallucination), 0 = all supported.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from typing import Any, ClassVar

from evalyard import Case, JudgeError, Score

from .base import JudgeScorer
from .debiased import DEFAULT_TIE_MARGIN, debiased_label
from .templates import template_name

class QACorrectness(JudgeScorer):
    name = "qa_correctness"
    description = ("Is the answer correct given the question and its context? correct = 1, incorrect = 0; "
                   "cannot_tell is a label with no value (not averaged in).")
    template_name = template_name("qa_correctness")
    requires = ("input", "candidate", "context")
    labels = ("correct", "incorrect", "cannot_tell")
    threshold = 0.5
    version = "1"


#: (order, whether that order shows the candidate first)
ORDERS = (("candidate_first", True), ("reference_first", False))


class SummaryQuality(JudgeScorer):
    name = "summary_quality"
    description = ("Pairwise: is the candidate summary better than the reference summary? Judged twice with the "
                   "positions swapped: win 1, tie 0.5, loss 0, averaged over the two orders.")
    template_name = template_name("summary_quality")
    requires = ("input", "candidate", "reference")
    labels = ("candidate", "reference", "equal", "inconsistent")
    threshold = 0.5
    #: 2: pass/fail is the verdict (the candidate won), so a tie or a split valued 0.5 or above
    #: (a debiased judge's 0.55 within its tie margin) no longer passes
    version = "2"

    def planned_requests(self, case: Case) -> list[Any]:
        """Both orders' judgements, as ``ascore`` asks them."""
        swapped = dataclasses.replace(case, candidate=case.reference, reference=case.candidate)
        return self.planned_judge(case) + self.planned_judge(swapped)

    async def ascore(self, case: Case) -> Score:
        swapped = dataclasses.replace(case, candidate=case.reference, reference=case.candidate)
        judged = await asyncio.gather(self.judge(case), self.judge(swapped))
        verdicts = []
        for (order, candidate_first), score in zip(ORDERS, judged):
            verdict: dict[str, Any] = {"order": order, "answer": score.label}
            if score.error is None:
                # The template's values are the first position's win share (first 1, tie 0.5, second 0).
                verdict["candidate_value"] = score.value if candidate_first else 1.0 - score.value
                verdict["winner"] = _winner(score.label, candidate_first)
            else:
                verdict["error"] = score.error
            verdict["details"] = score.details
            verdicts.append(verdict)
        usage = judged[0].usage + judged[1].usage
        failed = [v for v in verdicts if "error" in v]
        if failed:
            raise JudgeError("; ".join(f"{v['order']}: {v['error']}" for v in failed),
                             details={"verdicts": verdicts}, usage=usage)
        value = (verdicts[0]["candidate_value"] + verdicts[1]["candidate_value"]) / 2
        winners = [v["winner"] for v in verdicts]
        agreement = winners[0] == winners[1]
        margin = getattr(self.config, "tie_margin", DEFAULT_TIE_MARGIN)  # summary_quality keeps Arthur's options
        if self.config.logprobs:  # each order's value is its expected win share: see debiased.py
            label = debiased_label(value, margin)
        elif agreement:
            label = {"candidate": "candidate", "reference": "reference", "tie": "equal"}[winners[0]]
        elif value > 0.5:
            label = "candidate"
        elif value < 0.5:
            label = "reference"
        else:  # each order named a different winner: position decided, not content
            label = "inconsistent"
        details = {"verdicts": verdicts, "agreement": agreement, "winners": winners,
                   "position_bias": set(winners) == {"candidate", "reference"}, "position_consistent": agreement}
        if self.config.logprobs:
            details["tie_margin"] = margin
        # Passed when the candidate won: the threshold 0.5 alone would pass a tie or a split (value
        # 0.5, or a debiased judge's 0.55 inside its tie margin), which names no better response.
        return Score(value=value, label=label, passed=label == "candidate", details=details, usage=usage.to_dict())


def _winner(answer: str | None, candidate_first: bool) -> str:
    if answer == "tie" or answer is None:
        return "tie"
    first_won = answer == "first"
    return "candidate" if first_won == candidate_first else "reference"


class Pairwise(SummaryQuality):
    """The general pairwise judge: two responses to one input, judged in both orders. ``evalyard
    compare BASE NEW --judge pairwise`` gives it NEW's response as the candidate and BASE's as the
    reference; in a suite of your own, the reference is the response to compare against."""

    name = "pairwise"
    description = ("Pairwise: is the candidate a better response to the input than the reference (another "
                   "response)? Judged twice with the positions swapped: win 1, tie 0.5, loss 0, averaged. "
                   "With logprobs=true, the mean of both orders' P(candidate better), a tie within tie_margin.")
    template_name = template_name("pairwise")

    @dataclasses.dataclass
    class Config(JudgeScorer.Config):
        tie_margin: float = dataclasses.field(default=DEFAULT_TIE_MARGIN, metadata={
            "help": "with logprobs: a tie when the mean P(candidate better) is within this of 0.5"})

        def __post_init__(self) -> None:
            super().__post_init__()
            if not 0 <= self.tie_margin < 0.5:
                raise ValueError("tie_margin must be from 0 up to (not including) 0.5")


class Hallucination(JudgeScorer):
    name = "hallucination"
    description = ("Claims of the candidate, each checked against the context: 1 = at least one claim is "
                   "unsupported (hallucination), 0 = every claim is supported. Share and verdicts in details.")
    template_name = template_name("hallucination_check")
    requires = ("candidate", "context")
    labels = ("hallucination", "no_hallucination")
    higher_is_better = False
    threshold = 0.5
    version = "1"
    claims_template: ClassVar[str] = "hallucination_claims"

    def fingerprint_data(self) -> dict[str, Any]:
        data = super().fingerprint_data()
        data["steps"] = self.step_hashes(self.claims_template)
        data["convention"] = "1 = at least one claim unsupported, 0 = all claims supported"
        return data

    async def ascore(self, case: Case) -> Score:
        found, split_usage = await self.step(self.claims_template, "claims", case)
        claims = [c.strip() for c in found if isinstance(c, str) and c.strip()]
        if not claims:
            return Score(value=0.0, label="no_hallucination", usage=split_usage.to_dict(),
                         details={"claims": [], "unsupported": 0, "unsupported_share": None,
                                  "note": "the judge found no factual claim in the response"})
        checks = await asyncio.gather(*(
            self.judge(Case(id=f"{case.id}#claim{n}", candidate=claim, context=list(case.context)))
            for n, claim in enumerate(claims, 1)))
        verdicts = []
        for claim, check in zip(claims, checks):
            verdict: dict[str, Any] = {"claim": claim}
            if check.error is not None:
                verdict["error"] = check.error
            else:
                verdict["supported"] = check.label == "yes"
                verdict["value"] = check.value
            for key in ("reasoning", "p_yes", "agreement", "raw"):
                if key in check.details:
                    verdict[key] = check.details[key]
            verdicts.append(verdict)
        usage = sum((c.usage for c in checks), split_usage)
        checked = [v for v in verdicts if "error" not in v]
        unsupported = [v for v in checked if not v["supported"]]
        details = {"claims": verdicts, "unsupported": len(unsupported), "checked": len(checked),
                   "unsupported_share": len(unsupported) / len(checked) if checked else None}
        p_yes = [v["p_yes"] for v in checked if isinstance(v.get("p_yes"), (int, float))]
        if checked and len(p_yes) == len(checked):
            # P(at least one claim unsupported), the claims' P(yes) taken as independent: a graded value
            # for calibration (AUC) where the verdict is 0/1
            details["p_hallucination"] = 1.0 - math.prod(p_yes)
        if len(checked) < len(verdicts):
            details["unchecked"] = len(verdicts) - len(checked)
            if not unsupported:  # an unchecked claim could be the unsupported one: no verdict
                first = next(v["error"] for v in verdicts if "error" in v)
                raise JudgeError(f"{details['unchecked']} of {len(verdicts)} claims could not be checked: {first}",
                                 details=details, usage=usage)
        value = 1.0 if unsupported else 0.0
        return Score(value=value, label="hallucination" if unsupported else "no_hallucination", details=details,
                     usage=usage.to_dict())

    def calibration_value(self, score: Score) -> float | None:
        """P(hallucination) from the claims' P(yes) (with ``logprobs=true``), else the 0/1 value."""
        found = (score.details or {}).get("p_hallucination")
        return float(found) if isinstance(found, (int, float)) else score.value


SCORERS = (QACorrectness, SummaryQuality, Pairwise, Hallucination)
