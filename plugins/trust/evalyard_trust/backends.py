"""Entailment backends: does a premise (cited documents, or a response) support a hypothesis?

Trust-Score's citation and claim metrics were defined with ``google/t5_xxl_true_nli_mixture``
(TRUE, an 11B T5 NLI model). No such model ships offline, so the backend is chosen per run
and recorded in the scorer's fingerprint:

- ``judge``: the run's judge model through evalyard's model layer and the ``trust/entailment``
  prompt template (structured output, P(yes) against a threshold, or a text answer); every call
  is cached by the model layer. An approximation of TRUE, and labelled so.
- ``lexical``: the deterministic stub of the reference data (every content word of the
  hypothesis occurs in the premise). For tests and parity, not for judging real answers.
- anything a plugin adds through the trust plugin's hook ``register_entailment_backends``
  (``hookspecs.py``): ``register(name, factory)``, ``factory(config, runtime)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalyard import ConfigError

if TYPE_CHECKING:
    from evalyard import Runtime

STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers herself
him himself his how i if in into is it its itself just me more most my myself no nor not now of off on once only or
other our ours ourselves out over own same she should so some such than that the their theirs them themselves then
there these they this those through to too under until up very was we were what when where which while who whom why
will with would you your yours yourself yourselves
""".split())

_TOKEN = re.compile(r"[a-z0-9]+")


class EntailmentError(Exception):
    """An entailment call that produced no verdict (model failure, unreadable answer); ``usage``
    holds the calls it made (an ``evalyard.Usage``, or None)."""

    def __init__(self, message: str, usage: Any = None, **details: Any) -> None:
        super().__init__(message)
        self.details = details
        self.usage = usage


@dataclass
class Entailment:
    entailed: int  # 1 or 0, as the TRUE model's "1" / anything else
    details: dict[str, Any] = field(default_factory=dict)
    usage: Any = None  # the model calls behind the verdict (an ``evalyard.Usage``), None for none


class LexicalEntailment:
    """The reference data's stub: entailed iff the hypothesis has content words and all occur in the premise."""

    name = "lexical"
    approximation = "deterministic lexical stub (test and parity use only), not an NLI model"

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": self.name, "approximation_of": "google/t5_xxl_true_nli_mixture",
                "note": self.approximation}

    @staticmethod
    def decide(premise: str, hypothesis: str) -> int:
        premise_tokens = set(_TOKEN.findall(premise.lower()))
        content = [t for t in _TOKEN.findall(hypothesis.lower()) if len(t) > 1 and t not in STOPWORDS]
        return int(bool(content) and all(t in premise_tokens for t in content))

    async def entails(self, premise: str, hypothesis: str) -> Entailment:
        return Entailment(self.decide(premise, hypothesis))


class JudgeEntailment:
    """The judge model answers "does the passage support the claim?" through the judge service."""

    name = "judge"
    approximation = "LLM judge approximating the TRUE NLI model (google/t5_xxl_true_nli_mixture) of the paper"
    template_name = "trust/entailment"
    #: shipped with the plugin; a user's trust/entailment.jinja overrides it
    template_file = Path(__file__).parent / "prompts" / "entailment.jinja"
    top_logprobs = 10
    raw_limit = 2000

    def __init__(self, config: Any, runtime: Runtime) -> None:
        self.config = config
        try:
            self.judge = runtime.judge(self.template_name, config.model, scorer="trust", default=self.template_file,
                                       reasoning=False, top_logprobs=self.top_logprobs)
        except ConfigError as exc:
            raise ConfigError(f"{exc} (or use entailment=lexical for the deterministic stub)") from None
        self.model, self.template = self.judge.model, self.judge.template
        self.answer = config.entailment_answer
        self.threshold = config.entailment_threshold
        if self.template.answer.kind != "binary":
            raise ConfigError(f"trust: prompt template {self.template_name} must answer binary (yes/no), "
                              f"not {self.template.answer.kind}")

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": self.name, "answer": self.answer,
                "threshold": self.threshold if self.answer == "logprobs" else None, **self.judge.fingerprint(),
                "approximation_of": "google/t5_xxl_true_nli_mixture", "note": self.approximation}

    async def entails(self, premise: str, hypothesis: str) -> Entailment:
        pseudo_case = {"id": "entailment", "candidate": hypothesis, "context": [premise]}
        judgement = await self.judge.ask(pseudo_case, structured=self.answer == "structured",
                                         logprobs=self.answer == "logprobs")
        details = {"raw": (judgement.raw or "")[:self.raw_limit]}
        for key in ("p_yes", "logprobs", "repaired", "status", "attempts"):
            if key in judgement.details:
                details[key] = judgement.details[key]
        if judgement.error is not None:
            raise EntailmentError(f"entailment judge: {judgement.error}", judgement.usage, **details)
        if "p_yes" in details:
            return Entailment(int(details["p_yes"] >= self.threshold), details, judgement.usage)
        return Entailment(int(judgement.value == 1.0), details, judgement.usage)


def make_backend(name: str, config: Any, runtime: Runtime) -> Any:
    from .extensions import make

    return make("entailment backend", name, runtime, config, runtime)
