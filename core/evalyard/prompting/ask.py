"""``ask``: the one judge call that every model-graded scorer and generator composes.

``await ask(layer, model, template, case, ...)`` renders the template for the case, adds the
answer format, calls the model through the model layer (cache, retries, limits, usage), reads
the answer in the shape asked for and returns a :class:`Judgement`: a verdict or an error,
never an exception for the model's failures. ``judgement.score()`` is the Score to record;
``judgement.require()`` raises :class:`evalyard.JudgeError` (the case's recorded error, with
its details and usage) for a step whose answer the caller cannot do without.

**Parameters** (temperature, max_tokens, ...), one rule, highest first:

1. what the scorer's (or generator's) config sets (``params=``; None means "not set");
2. the template's ``parameters:``;
3. the model's settings (a suite's ``models:`` section);
4. the caller's ``defaults=`` (judges: temperature 0; a P(yes) judge: a few answer tokens).

**Answers.** Text answers (binary, score, choice) are read from the reply's last line; a reply
that holds none gets one repair call asking for the answer alone, constrained by the answer's
schema where the provider takes one (grammar-constrained on local models). JSON answers use the
model layer's one structured-output strategy (provider schema, else the schema in the prompt,
then one repair call). With ``logprobs=True`` a binary answer's value is P(yes) from the first
answer token's alternatives, the reply is a single word (reasoning off, a few tokens at most),
and ``details`` say where the value came from. A choice whose every label has a value reads its
labels' probabilities the same way (``details.p_labels``): the value is their expected value, the
label the most probable one.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ..models.usage import Usage
from ..scoring import JudgeError, Score
from .answers import LOGPROBS_ANSWERS, AnswerError, AnswerShape, Verdict
from .template import PromptTemplate

if TYPE_CHECKING:
    from ..models.layer import ModelLayer

#: How many alternatives to ask for per token when a binary answer is read as P(yes).
TOP_LOGPROBS = 10
#: A P(yes) judge reads the first answer token only, so it generates just that one.
ANSWER_TOKENS = 1
#: Room for the repair call's JSON answer (``{"answer": "yes"}`` and the like).
REPAIR_TOKENS = 40
RAW_LIMIT = 4000
JUDGE_DEFAULTS = {"temperature": 0.0}


@dataclass
class Judgement:
    """What one ask gave: a value/label (``answer`` holds the parsed answer: the JSON object of a
    JSON answer), or an ``error``; ``raw`` the reply text, ``details`` how it was read, ``usage``
    every call made (errors included: the calls were made)."""

    value: float | None = None
    label: str | None = None
    answer: Any = None
    raw: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    #: the reply's per-token logprobs (one sample), for callers with a reading of their own
    logprobs: list[dict[str, Any]] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def score(self) -> Score:
        """The Score to record for this judgement."""
        if self.error is not None:
            return Score(value=None, error=self.error, details=dict(self.details), usage=self.usage.to_dict())
        return Score(value=self.value, label=self.label, details=dict(self.details), usage=self.usage.to_dict())

    def require(self, step: str | None = None, usage: Usage | None = None) -> "Judgement":
        """This judgement, or :class:`JudgeError` naming the step when it has no answer; ``usage``
        (earlier steps' calls) is added to the error's."""
        if self.error is not None:
            message = f"{step}: {self.error}" if step else self.error
            details = {**self.details, **({"step": step} if step else {})}
            raise JudgeError(message, details=details, usage=(usage or Usage()) + self.usage)
        return self


def call_params(layer: ModelLayer, model: str, *, config: dict[str, Any] | None = None,
                template: dict[str, Any] | None = None, defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """The request parameters by the one rule: config > template > model settings > defaults."""
    merged = dict(defaults or {})
    merged.update(layer.settings_for(model).params)
    merged.update(template or {})
    merged.update({key: value for key, value in (config or {}).items() if value is not None})
    return merged


async def ask(layer: ModelLayer, model: str, prompt: PromptTemplate | list[dict[str, Any]], case: Any = None, *,
              answer: AnswerShape | None = None, variables: dict[str, Any] | None = None, reasoning: bool = True,
              structured: bool = False, logprobs: bool = False, samples: int = 1, vote: str = "auto",
              params: dict[str, Any] | None = None, defaults: dict[str, Any] | None = None,
              read: Callable[[str], Any] | None = None, repair: bool = True, first_sample: int = 0,
              schema_name: str = "answer", top_logprobs: int = TOP_LOGPROBS) -> Judgement:
    """Ask ``model`` for a judgement (see the module's doc for the rules).

    ``prompt`` is a template (rendered for ``case`` with ``variables``) or ready messages (then
    ``answer`` is required). ``read`` replaces the JSON reader of a JSON answer (text -> value,
    ValueError when unreadable); ``repair=False`` makes no repair call (a reproduction of a tool
    that makes none). ``samples`` asks n times (sample indexes from ``first_sample``: the cache
    keeps each) and combines the verdicts by ``vote``: majority label or mean value. ``top_logprobs``
    is how many alternatives a P(yes) reading asks for (a reproduction asks what its original did).
    """
    asking, structured, logprobs = _prepare(layer, model, prompt, case, answer, variables, reasoning, structured,
                                            logprobs, params, defaults, read, repair, schema_name, top_logprobs)
    outcomes = await asyncio.gather(*(
        asking.json(first_sample + n) if structured else asking.text(first_sample + n, logprobs)
        for n in range(samples)))
    judgement = _combine(asking.shape, list(outcomes), vote, logprobs)
    judgement.usage = Usage.of(asking.completions)
    judgement.details.setdefault("model", model)
    return judgement


def planned_asks(layer: ModelLayer, model: str, prompt: PromptTemplate | list[dict[str, Any]], case: Any = None, *,
                 answer: AnswerShape | None = None, variables: dict[str, Any] | None = None, reasoning: bool = True,
                 structured: bool = False, logprobs: bool = False, samples: int = 1,
                 params: dict[str, Any] | None = None, defaults: dict[str, Any] | None = None,
                 first_sample: int = 0, schema_name: str = "answer", top_logprobs: int = TOP_LOGPROBS,
                 **_: Any) -> list[Any]:
    """The requests :func:`ask` would send with the same arguments, rendered and keyed but not
    sent (``evalyard run --plan``): one per sample. A repair call follows only an unreadable
    reply, which no plan can foresee, so none is planned."""
    asking, structured, logprobs = _prepare(layer, model, prompt, case, answer, variables, reasoning, structured,
                                            logprobs, params, defaults, None, True, schema_name, top_logprobs)
    kind = asking.shape.kind
    out = []
    for sample in range(first_sample, first_sample + samples):
        if structured:
            messages, sent = layer.json_request(model, asking.messages, asking.shape.answer_schema(asking.reasoning),
                                                params=asking.params, schema_name=schema_name,
                                                instructions=asking.shape.format)
            out.append(layer.planned(model, messages, params=sent, sample=sample, answer=f"{kind}/json"))
        else:
            request = layer.planned(model, asking.messages, params=asking.params, sample=sample,
                                    logprobs=asking.top_logprobs if logprobs else None,
                                    answer=f"{kind}/{'logprobs' if logprobs else 'reasoning' if reasoning else 'text'}")
            if logprobs:
                request.output_tokens = request.params.get("max_tokens")
            out.append(request)
    return out


def _prepare(layer: ModelLayer, model: str, prompt: Any, case: Any, answer: AnswerShape | None,
             variables: dict[str, Any] | None, reasoning: bool, structured: bool, logprobs: bool,
             params: dict[str, Any] | None, defaults: dict[str, Any] | None, read: Any, repair: bool,
             schema_name: str, top_logprobs: int = TOP_LOGPROBS) -> tuple["_Asking", bool, bool]:
    """Render the messages and settle the parameters of one ask (shared by ``ask`` and its plan)."""
    shape = answer or (prompt.answer if isinstance(prompt, PromptTemplate) else None)
    if shape is None:
        raise ValueError("ask: give the answer shape with messages (a template declares its own)")
    structured = structured or shape.kind == "json"
    if logprobs and not shape.reads_logprobs:
        raise ValueError(LOGPROBS_ANSWERS + f" (this answer is {shape.kind})")
    logprobs = logprobs and not structured
    reasoning = reasoning and not logprobs
    if isinstance(prompt, PromptTemplate):
        messages = prompt.render(case if case is not None else {}, variables=variables, reasoning=reasoning,
                                 structured=structured, answer=shape).messages
        messages = cache_marked(model, messages)
        # The name is request metadata (a scripted model's rules match on it), not in the cache key.
        name: Any = prompt.name
        template_params = prompt.parameters
    else:
        messages, name, template_params = list(prompt), None, {}
        if not structured:
            messages = _with_text(messages, shape.instructions(reasoning))
    base = dict(JUDGE_DEFAULTS if defaults is None else defaults)
    if logprobs:
        base["max_tokens"] = ANSWER_TOKENS
    sent = call_params(layer, model, config=params, template=template_params, defaults=base)
    asking = _Asking(layer, model, messages, shape, sent, name, read, repair, schema_name, reasoning)
    asking.top_logprobs = top_logprobs
    return asking, structured, logprobs


@dataclass
class _Outcome:
    verdict: Verdict | None = None
    answer: Any = None
    raw: str | None = None
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    sample: int = 0
    logprobs: list[dict[str, Any]] | None = None


class _Asking:
    """One ask's fixed parts, and the calls its samples make."""

    def __init__(self, layer: ModelLayer, model: str, messages: list[dict[str, Any]], shape: AnswerShape,
                 params: dict[str, Any], template: Any, read: Callable[[str], Any] | None, repair: bool,
                 schema_name: str, reasoning: bool) -> None:
        self.layer, self.model, self.messages, self.shape = layer, model, messages, shape
        self.params, self.template, self.read, self.repair = params, template, read, repair
        self.schema_name, self.reasoning = schema_name, reasoning
        self.completions: list[Any] = []
        self.top_logprobs = TOP_LOGPROBS

    async def json(self, sample: int) -> _Outcome:
        from ..models import ModelCallError, StructuredOutputError

        outcome = _Outcome(sample=sample)
        try:
            answer = await self.layer.complete_json(
                self.model, self.messages, self.shape.answer_schema(self.reasoning), params=self.params,
                sample=sample, template=self.template, read=self.read, instructions=self.shape.format,
                repair=self.repair, schema_name=self.schema_name)
        except StructuredOutputError as exc:
            self.completions.extend(exc.completions)  # made and paid for: the usage counts them
            outcome.raw, outcome.error = exc.raw, str(exc)
            return outcome
        except ModelCallError as exc:
            outcome.error = str(exc)
            outcome.details.update(status=exc.status, attempts=exc.attempts)
            return outcome
        self.completions.extend(answer.completions)
        outcome.raw, outcome.answer = answer.text, answer.value
        outcome.details["mode"] = answer.mode
        if answer.repaired:
            outcome.details["repaired"] = True
        try:
            outcome.verdict = self.shape.read_object(answer.value)
        except AnswerError as exc:
            outcome.error = f"unreadable answer: {exc}"
        return outcome

    async def text(self, sample: int, logprobs: bool) -> _Outcome:
        from ..models import ModelCallError, label_probabilities, p_yes

        outcome = _Outcome(sample=sample)
        try:
            completion = await self.layer.complete(self.model, self.messages, params=self.params, sample=sample,
                                                   logprobs=self.top_logprobs if logprobs else None,
                                                   template=self.template)
        except ModelCallError as exc:
            outcome.error = str(exc)
            outcome.details.update(status=exc.status, attempts=exc.attempts)
            return outcome
        self.completions.append(completion)
        outcome.raw, outcome.logprobs = completion.text, completion.logprobs
        choice = logprobs and self.shape.kind == "choice"
        shares = label_probabilities(completion.top_logprobs(), self.shape.labels) if choice else None
        probability = p_yes(completion.top_logprobs()) if logprobs and not choice else None
        try:
            verdict = self.shape.read_text(completion.text)
        except AnswerError as exc:
            if probability is not None or shares is not None:  # the value is from logprobs, not the text
                verdict = Verdict(None, None, completion.text)
            else:
                verdict = await self._repaired(sample, completion.text, exc, outcome)
                if verdict is None:
                    return outcome
        outcome.answer = verdict.raw
        if shares is not None:
            values = self.shape.values or {}
            best = max(self.shape.labels, key=lambda label: shares[label])  # ties: the first declared
            outcome.details.update(p_labels=shares, value_from="label probabilities of the first answer token")
            verdict = Verdict(sum(shares[label] * values[label] for label in self.shape.labels), best,
                              verdict.raw, verdict.details)
        elif logprobs and probability is None:
            what = "label" if choice else "yes/no"
            outcome.details["logprobs"] = (f"unavailable: the model returned no {what} token probabilities; "
                                           "value from the parsed answer")
        elif logprobs:
            outcome.details.update(p_yes=probability, value_from="P(yes) of the first answer token")
            verdict = Verdict(probability, "yes" if probability >= 0.5 else "no", verdict.raw, verdict.details)
        outcome.verdict = verdict
        return outcome

    async def _repaired(self, sample: int, reply: str, problem: AnswerError, outcome: _Outcome) -> Verdict | None:
        """One repair call for a text answer: the answer alone, constrained by its schema where the
        provider takes one. None (and the outcome's error set) when there is still no answer."""
        from ..models import ModelCallError, StructuredOutputError

        if not self.repair:
            outcome.error = f"unreadable answer: {problem}"
            return None
        again = self.messages + [{"role": "assistant", "content": reply},
                                 {"role": "user", "content": f"That reply cannot be read ({problem}). "
                                                             + self.shape.instructions(False)}]
        params = {**self.params, "max_tokens": REPAIR_TOKENS}
        try:
            answer = await self.layer.complete_json(self.model, again, self.shape.answer_schema(False),
                                                    params=params, sample=sample, template=self.template,
                                                    read=self._read_repair, repair=False,
                                                    schema_name=self.schema_name)
        except StructuredOutputError as exc:
            self.completions.extend(exc.completions)
            outcome.error = f"unreadable answer: {problem} (and after one repair call: {exc})"
            outcome.details["repair_raw"] = exc.raw[:RAW_LIMIT]
            return None
        except ModelCallError as exc:
            outcome.error = f"unreadable answer: {problem} (the repair call failed: {exc})"
            return None
        self.completions.extend(answer.completions)
        outcome.details.update(repaired=True, repair_raw=answer.text[:RAW_LIMIT])
        return answer.value

    def _read_repair(self, text: str) -> Verdict:
        """A repair reply: the JSON ``{"answer": ...}`` (schema mode) or the bare answer."""
        from ..models.structured import parse_json_answer

        try:
            return self.shape.read_object(parse_json_answer(text, self.shape.answer_schema(False)))
        except ValueError:
            return self.shape.read_text(text)


def cache_marked(model: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A rendered template's system message is its static part (see ``PromptTemplate.render``);
    Anthropic reuses a cached prefix only where the request marks its end."""
    if not model.startswith("anthropic/") or not messages or messages[0].get("role") != "system" \
            or not isinstance(messages[0].get("content"), str):
        return messages
    system = {"role": "system", "content": [{"type": "text", "text": messages[0]["content"],
                                             "cache_control": {"type": "ephemeral"}}]}
    return [system, *messages[1:]]


def _with_text(messages: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    out = [dict(m) for m in messages]
    out[-1]["content"] = str(out[-1].get("content") or "").rstrip() + "\n\n" + text
    return out


def _combine(shape: AnswerShape, outcomes: list[_Outcome], vote: str, logprobs: bool) -> Judgement:
    details: dict[str, Any] = {}
    if len(outcomes) == 1:
        only = outcomes[0]
        details.update(only.details)
        if only.raw is not None:
            details["raw"] = only.raw[:RAW_LIMIT]
        if only.error is not None:
            return Judgement(raw=only.raw, details=details, error=only.error, answer=only.answer,
                             logprobs=only.logprobs)
        verdict = only.verdict
        assert verdict is not None
        details.update(verdict.details)
        return Judgement(verdict.value, verdict.label, only.answer, only.raw, details, logprobs=only.logprobs)
    details["samples"] = [_sample_details(o) for o in outcomes]
    good = [o for o in outcomes if o.error is None]
    if not good:
        errors = [o.error or "no answer" for o in outcomes]
        return Judgement(details=details, error=errors[0] if len(set(errors)) == 1 else "; ".join(errors))
    verdicts = [o.verdict for o in good if o.verdict is not None]
    if vote == "auto":
        vote = "majority" if shape.kind in ("binary", "choice") and not logprobs else "mean"
    labels = [v.label for v in verdicts if v.label is not None]
    counts = Counter(labels)
    numbers = [v.value for v in verdicts if v.value is not None]
    label: str | None = None
    if labels:
        top = max(counts.values())
        order = {name: n for n, name in enumerate(shape.labels)}
        tied = [lab for lab in sorted(counts, key=lambda lab: (order.get(lab, len(order)), lab))
                if counts[lab] == top]
        label = tied[0]
        if len(tied) > 1:
            details["tie"] = tied
    value: float | None
    if vote == "majority" and label is not None:
        chosen = [v.value for v in verdicts if v.label == label and v.value is not None]
        value = chosen[0] if chosen else None
        if len(details.get("tie", [])) > 1 and numbers:
            value = sum(numbers) / len(numbers)
    else:
        value = sum(numbers) / len(numbers) if numbers else None
    if labels:
        details["agreement"] = max(counts.values()) / len(verdicts)
    else:
        details["agreement"] = max(Counter(numbers).values()) / len(verdicts) if numbers else None
    details.update(answered=len(good), vote=vote)
    if shape.kind == "score":
        details["raw_score_mean"] = sum(v.details["raw_score"] for v in verdicts) / len(verdicts)
    return Judgement(value, label, [o.answer for o in good], None, details)


def _sample_details(outcome: _Outcome) -> dict[str, Any]:
    out: dict[str, Any] = {"sample": outcome.sample, **outcome.details}
    if outcome.raw is not None:
        out["raw"] = outcome.raw[:RAW_LIMIT]
    if outcome.error is not None:
        out["error"] = outcome.error
    if outcome.verdict is not None:
        out.update({"value": outcome.verdict.value, "label": outcome.verdict.label})
        out.update(outcome.verdict.details)
    return out
