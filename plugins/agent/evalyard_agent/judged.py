"""Judged conversation scorers: every one asks the run's judge (``runtime.judge``, through
``PromptScorer``), so calibration, the judge card and intervals work as for every judge.

- ``agent/goal_success``: Ragas 0.4.3's ``AgentGoalAccuracyWithReference`` / ``...WithoutReference``:
  step 1 infers the user's goal and the end state from the conversation; step 2 compares the end
  state with the outcome wanted (the case's ``reference`` when it has one, else the inferred goal)
  and answers ``verdict`` "1" or "0", which is the value.
- per-turn judges (``agent/turn_relevance``, ``agent/knowledge_retention``, ``agent/role_adherence``):
  one yes/no judgement per assistant reply, the value the share of replies judged yes (DeepEval's
  ConversationRelevancy, KnowledgeRetention and RoleAdherence reduce the same way).
- ``agent/completeness``: the user's intentions listed, then each judged met or not; the value is
  the share met (DeepEval's ConversationCompleteness).

Per-turn verdicts are in ``details.turns``: ``{"message": index in case.messages, "verdict":
"yes"|"no", "value", "reason"}``, so the report places each beside its message. Any judgement
without a readable answer makes the case's recorded error (with the verdicts so far), never a 0.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from evalyard import Case, JudgeError, PromptLibrary, PromptScorer, Score, Usage, resolve_template

from .transcript import assistant_replies, system_role, transcript

TEMPLATE_DIR = Path(__file__).parent / "templates"
NAMESPACE = "agent"
#: How much of a judge's reasoning a verdict keeps.
REASON_LIMIT = 600


def template_name(stem: str) -> str:
    return f"{NAMESPACE}/{stem}"


def reason_of(judgement: Any) -> str:
    """The judge's reasoning: a JSON answer's ``reason``, else the reply without its answer line."""
    if isinstance(judgement.answer, dict) and "reason" in judgement.answer:
        return str(judgement.answer["reason"])[:REASON_LIMIT]
    lines = [line for line in (judgement.raw or "").splitlines() if line.strip()]
    return "\n".join(lines[:-1]).strip()[:REASON_LIMIT]


class ConversationJudge(PromptScorer):
    """A judge of a conversation whose templates ship in this plugin (``templates/``); a user's
    own ``agent/<stem>.jinja`` in a prompts directory overrides one."""

    requires = ("messages",)
    #: the templates of the scorer's steps, besides its own (``template_name``)
    steps: ClassVar[tuple[str, ...]] = ()

    @property
    def template_file(self) -> Path:  # type: ignore[override]
        return TEMPLATE_DIR / f"{self.template_name.rpartition('/')[2]}.jinja"

    def required_fields(self) -> tuple[str, ...]:
        return tuple(self.requires)

    def step_template(self, stem: str):
        if self.prompts is None:
            self.prompts = PromptLibrary()
        return resolve_template(self.prompts, template_name(stem), TEMPLATE_DIR / f"{stem}.jinja")

    def fingerprint_data(self) -> dict[str, Any]:
        data = super().fingerprint_data()
        if self.steps:
            data["steps"] = {template_name(s): self.step_template(s).hash for s in self.steps}
        return data

    async def json_step(self, stem: str, case_id: str, metadata: dict[str, Any], usage: Usage) -> tuple[dict, Usage]:
        """One JSON step's answer, and ``usage`` plus its calls; JudgeError without an answer."""
        judgement = await self.judge(Case(id=case_id, metadata=metadata), template=self.step_template(stem),
                                     answer=None, reasoning=False, structured=True, logprobs=False, samples=1)
        judgement.require(stem, usage)
        return judgement.answer, usage + judgement.usage

    async def verdicts(self, case_id: str, asks: list[tuple[dict[str, Any], dict[str, Any]]]
                       ) -> tuple[list[dict[str, Any]], Usage, str | None]:
        """Yes/no judgements with the scorer's own template, one per ``(verdict fields, template
        metadata)``, asked together with the scorer's options (samples, logprobs, reasoning): the
        verdicts, their usage, and the first error (None when every one was read)."""
        judgements = await asyncio.gather(*(self.judge(Case(id=case_id, metadata=metadata)) for _, metadata in asks))
        usage, out, error = Usage(), [], None
        for (fields, _), judgement in zip(asks, judgements):
            usage = usage + judgement.usage
            if judgement.error is not None:
                error = error or f"{self.describe(fields)}: {judgement.error}"
                out.append({**fields, "verdict": None, "value": None, "error": judgement.error})
                continue
            out.append({**fields, "verdict": judgement.label, "value": judgement.value,
                        "reason": reason_of(judgement)})
        return out, usage, error

    @staticmethod
    def describe(fields: dict[str, Any]) -> str:
        return f"message {fields['message']}" if "message" in fields else f"intention {fields['intention']!r}"

    @staticmethod
    def reduced(verdicts: list[dict[str, Any]], usage: Usage, error: str | None, details: dict[str, Any]) -> Score:
        """The case's score: the share of yes (the mean value) over ``verdicts``, or ``error``."""
        if error:
            return Score(value=None, error=error, details=details, usage=usage.to_dict())
        return Score(value=sum(v["value"] for v in verdicts) / len(verdicts), details=details, usage=usage.to_dict())


class TurnJudge(ConversationJudge):
    """Each assistant reply judged yes or no; the value is the share of yes (the mean of P(yes)
    with ``logprobs``)."""

    threshold = 0.5

    def turn_metadata(self, case: Case, index: int) -> dict[str, Any]:
        # the judge sees every earlier message, or the last `window` of them (turn_relevance)
        window = getattr(self.config, "window", None)
        start = index - window if window else 0
        return {"history": transcript(case.messages, start, index), "reply": transcript(case.messages, index, index + 1)}

    def refusal(self, case: Case) -> str | None:
        """Why this case cannot be judged (before any call), or None."""
        return None

    async def ascore(self, case: Case) -> Score:
        replies = assistant_replies(case.messages or [])
        if not replies:
            return Score.failure("the conversation has no assistant reply with text to judge")
        refused = self.refusal(case)
        if refused:
            return Score.failure(refused)
        asks = [({"message": n}, self.turn_metadata(case, n)) for n in replies]
        turns, usage, error = await self.verdicts(case.id, asks)
        return self.reduced(turns, usage, error, {"turns": turns, "judged_turns": len(turns)})


class TurnRelevance(TurnJudge):
    name = "turn_relevance"
    description = ("Share of the assistant's replies judged relevant to the conversation before them (a window of "
                   "`window` messages); per-reply verdicts in details.turns (DeepEval's ConversationRelevancy).")
    template_name = template_name("turn_relevance")

    @dataclass
    class Config(PromptScorer.Config):
        window: int = field(default=10, metadata={"help": "how many messages before a reply the judge sees "
                                                          "(DeepEval's window_size)"})

        def __post_init__(self) -> None:
            super().__post_init__()
            if self.window < 1:
                raise ValueError("window must be at least 1")


class KnowledgeRetention(TurnJudge):
    name = "knowledge_retention"
    description = ("Share of the assistant's replies that keep what the user said earlier (no re-asking, no "
                   "contradiction); per-reply verdicts in details.turns (DeepEval's KnowledgeRetention).")
    template_name = template_name("turn_retention")


class RoleAdherence(TurnJudge):
    name = "role_adherence"
    description = ("Share of the assistant's replies that stay in its role (the `role` option, the case's "
                   "metadata.role, else its system messages); per-reply verdicts in details.turns (DeepEval's RoleAdherence).")
    template_name = template_name("turn_role")

    @dataclass
    class Config(PromptScorer.Config):
        role: str | None = field(default=None, metadata={
            "help": "the assistant's role; default: the case's metadata.role, else its system messages"})

    def role_of(self, case: Case) -> str:
        return self.config.role or str((case.metadata or {}).get("role") or "") or system_role(case.messages or [])

    def refusal(self, case: Case) -> str | None:
        if not self.role_of(case).strip():
            return ("no role to judge against: give the scorer a `role` option, the case a metadata.role, or the "
                    "conversation a system message")
        return None

    def turn_metadata(self, case: Case, index: int) -> dict[str, Any]:
        return {**super().turn_metadata(case, index), "role": self.role_of(case)}


class Completeness(ConversationJudge):
    name = "completeness"
    description = ("Share of the user's intentions (listed by the judge from the user's messages) that the "
                   "conversation met; per-intention verdicts in details.intentions (DeepEval's ConversationCompleteness).")
    template_name = template_name("completeness_check")
    steps = ("completeness_intentions",)
    threshold = 0.5

    async def ascore(self, case: Case) -> Score:
        text = transcript(case.messages or [])
        try:
            answer, usage = await self.json_step("completeness_intentions", case.id, {"transcript": text}, Usage())
        except JudgeError as exc:
            return Score.failure(exc)
        intentions = [str(i).strip() for i in answer.get("intentions") or () if str(i).strip()]
        if not intentions:  # nothing asked, nothing left undone (DeepEval scores this 1 too)
            return Score(value=1.0, details={"intentions": []}, usage=usage.to_dict())
        asks = [({"intention": i}, {"transcript": text, "intention": i}) for i in intentions]
        verdicts, more, error = await self.verdicts(case.id, asks)
        return self.reduced(verdicts, usage + more, error, {"intentions": verdicts})


class GoalSuccess(ConversationJudge):
    name = "goal_success"
    description = ("1 when the conversation reached the user's goal, else 0: Ragas 0.4.3's AgentGoalAccuracy, "
                   "with the case's reference as the outcome wanted when it has one (WithReference), else the goal "
                   "the judge infers (WithoutReference).")
    template_name = template_name("goal_compare")
    steps = ("goal_outcome",)
    labels = ("yes", "no")
    threshold = 0.5

    @dataclass
    class Config(PromptScorer.Config):
        reference: str = field(default="auto", metadata={
            "help": "auto: the case's reference when it has one; require: refuse cases without one; ignore: "
                    "always compare with the inferred goal"})

        def __post_init__(self) -> None:
            super().__post_init__()
            if self.reference not in ("auto", "require", "ignore"):
                raise ValueError("reference must be auto, require or ignore")
            if self.samples != 1:
                raise ValueError("goal_success asks each step once (samples: 1), as Ragas does")

    def required_fields(self) -> tuple[str, ...]:
        return ("messages", "reference") if self.config.reference == "require" else ("messages",)

    async def ascore(self, case: Case) -> Score:
        reference = (case.reference or "").strip() if self.config.reference != "ignore" else ""
        details: dict[str, Any] = {"with_reference": bool(reference)}
        try:
            inferred, usage = await self.json_step("goal_outcome", case.id,
                                                   {"transcript": transcript(case.messages or [])}, Usage())
            details.update(user_goal=inferred["user_goal"], end_state=inferred["end_state"])
            desired = reference or inferred["user_goal"]
            details["desired_outcome"] = desired
            compared, usage = await self.json_step("goal_compare", case.id, {
                "user_goal": inferred["user_goal"], "desired_outcome": desired, "end_state": inferred["end_state"]},
                usage)
        except JudgeError as exc:
            return Score.failure(exc, **details)
        if compared.get("verdict") not in ("0", "1"):  # a schema the provider did not enforce
            return Score.failure(f"goal_compare: unreadable verdict {compared.get('verdict')!r} (expected \"0\" or "
                                 "\"1\")", **details)
        achieved = compared["verdict"] == "1"
        details.update(verdict=compared["verdict"], reason=str(compared.get("reason", ""))[:REASON_LIMIT])
        return Score(value=1.0 if achieved else 0.0, label="yes" if achieved else "no", details=details,
                     usage=usage.to_dict())


SCORERS = (GoalSuccess, TurnRelevance, KnowledgeRetention, RoleAdherence, Completeness)
