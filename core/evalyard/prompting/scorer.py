"""Prompt scorers: a template plus an answer shape, judged through the model layer.

The core hands each scorer the run's runtime before anything is stored (``setup``): its
judge model, prompt library and model layer. A scorer used outside a run falls back to a
private in-memory layer and the built-in library.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from ..errors import ConfigError
from ..scoring import Score, Scorer
from .answers import AnswerError, AnswerShape, Verdict
from .template import TEMPLATE_FIELDS, PromptTemplate, parse_template

#: How many alternatives to ask for per token when a scorer reads P(yes).
TOP_LOGPROBS = 10
RAW_LIMIT = 4000


def missing_model_message(scorer: str) -> str:
    return (f"scorer {scorer} needs a judge model: pass --judge-model MODEL, set EVALYARD_JUDGE_MODEL, "
            f"or give the scorer a `model` option in the suite")


class PromptScorer(Scorer):
    """Base of every prompt scorer. Subclasses set ``template_name`` (looked up in the
    library) or ``template`` (a parsed template), and optionally ``answer``."""

    executor: ClassVar[str] = "async"
    # Small batches: results are written batch by batch, and a judged case is slow, so an
    # interrupted run keeps nearly every finished judgement as a result (and all as cache).
    batch_size: ClassVar[int] = 8
    template_name: ClassVar[str] = ""
    template: ClassVar[PromptTemplate | None] = None
    answer: ClassVar[AnswerShape | None] = None

    @dataclass
    class Config:
        model: str | None = field(default=None, metadata={"help": "judge model (litellm model string)"})
        temperature: float | None = field(default=None, metadata={"help": "default 0, or the template's"})
        samples: int = field(default=1, metadata={"help": "judge each case n times"})
        vote: Literal["auto", "majority", "mean"] = field(
            default="auto", metadata={"help": "combine samples: majority label or mean value"})
        reasoning: bool = field(default=True, metadata={"help": "ask for reasoning before the answer"})
        logprobs: bool = field(default=False, metadata={"help": "value from P(yes) (binary answers)"})
        structured: bool = field(default=False, metadata={"help": "ask for a JSON answer (schema)"})
        max_tokens: int | None = None
        variables: dict = field(default_factory=dict, metadata={"help": "values for the template's variables"})

        def __post_init__(self) -> None:
            if self.samples < 1:
                raise ValueError("samples must be at least 1")
            if self.temperature is not None and not 0 <= self.temperature <= 2:
                raise ValueError("temperature must be between 0 and 2")

    #: Set by ``setup`` (or by hand, outside a run).
    runtime: Any = None
    models: Any = None
    prompts: Any = None

    def __init__(self, config: Any = None, **options: Any) -> None:
        super().__init__(config, **options)
        self._own_layer: Any = None

    # -- what it needs -------------------------------------------------------------
    def prompt_template(self) -> PromptTemplate:
        if self.template is not None:
            return self.template
        library = self.prompts
        if library is None:
            from .library import PromptLibrary

            library = self.prompts = PromptLibrary()
        # One template per library for the scorer's life (a run): looked up on every case.
        cached = self.__dict__.get("_template_from")
        if cached is None or cached[0] is not library:
            cached = self._template_from = (library, library.get(self.template_name))
        return cached[1]

    def answer_shape(self) -> AnswerShape:
        return self.answer or self.prompt_template().answer

    def required_fields(self) -> tuple[str, ...]:
        try:
            return tuple(f for f in self.prompt_template().fields if f != "id")
        except Exception:  # an unreadable template is reported when scoring starts
            return tuple(self.requires)

    def setup(self, runtime: Any) -> None:
        self.runtime = runtime
        self.prompts = runtime.prompts
        self.check_ready()

    def judge_model(self) -> str:
        """The model: the scorer's ``model``, else the run's judge model, else EVALYARD_JUDGE_MODEL."""
        model = (self.config.model or getattr(self.runtime, "judge_model", None)
                 or getattr(self.models, "judge_model", None) or os.environ.get("EVALYARD_JUDGE_MODEL"))
        if not model:
            raise ConfigError(missing_model_message(self.name or type(self).__name__))
        return model

    def check_ready(self) -> None:
        """Fail before scoring starts: no model, unreadable template, impossible options."""
        self.judge_model()
        shape = self.answer_shape()
        if self.config.logprobs and shape.kind != "binary":
            raise ConfigError(f"scorer {self.name}: logprobs works with binary answers only "
                              f"(this template answers {shape.kind})")

    def fingerprint_data(self) -> dict[str, Any]:
        """What decides this scorer's values: version and options, the judge model and the template's hash."""
        template = self.prompt_template()
        return {**super().fingerprint_data(), "template": template.name, "template_hash": template.hash,
                "template_source": template.origin, "model": self.judge_model()}

    def layer(self) -> Any:
        if self.models is not None:
            return self.models
        if self.runtime is not None:
            return self.runtime.models
        if self._own_layer is None:
            from ..models import ModelLayer

            self._own_layer = ModelLayer()
        return self._own_layer

    def close(self) -> None:
        if self._own_layer is not None:
            self._own_layer.close()
            self._own_layer = None

    # -- scoring -------------------------------------------------------------------
    async def ascore_batch(self, cases: list[Any]) -> list[Score]:
        from ..models import CostLimitReached

        self.check_ready()  # a configuration error stops the run instead of failing each case

        async def one(case: Any) -> Score:
            try:
                return await self.ascore(case)
            except CostLimitReached:
                raise
            except Exception as exc:
                return Score.failure(exc)

        return list(await asyncio.gather(*(one(c) for c in cases)))

    async def ascore(self, case: Any) -> Score:
        from ..models import CostLimitReached, ModelCallError, StructuredOutputError
        from ..models.usage import summarise_calls

        template = self.prompt_template()
        shape = self.answer_shape()
        model = self.judge_model()
        config = self.config
        structured = config.structured or shape.kind == "json"
        reasoning = config.reasoning and not config.logprobs
        rendered = template.render(case, variables=config.variables, reasoning=reasoning, structured=structured)
        params = dict(template.parameters)
        params["temperature"] = config.temperature if config.temperature is not None else params.get(
            "temperature", 0.0)
        if config.max_tokens is not None:
            params["max_tokens"] = config.max_tokens
        layer = self.layer()
        completions: list[Any] = []

        async def sample(index: int) -> dict[str, Any]:
            outcome: dict[str, Any] = {"sample": index}
            try:
                if structured:
                    schema = shape.answer_schema(reasoning)
                    answer = await layer.complete_json(model, rendered.messages, schema, params=params, sample=index,
                                                       template=template.name)
                    completions.extend(answer.completions)
                    outcome["raw"] = answer.text
                    outcome["mode"] = answer.mode
                    if answer.repaired:
                        outcome["repaired"] = True
                    verdict = shape.read_object(answer.value)
                else:
                    completion = await layer.complete(model, rendered.messages, params=params, sample=index,
                                                      logprobs=TOP_LOGPROBS if config.logprobs else None,
                                                      template=template.name)
                    completions.append(completion)
                    outcome["raw"] = completion.text
                    verdict = self._read_text(shape, completion, outcome)
            except CostLimitReached:
                raise
            except StructuredOutputError as exc:
                completions.extend(exc.completions)  # both calls were made: the result's usage counts them
                outcome.update({"raw": exc.raw[:RAW_LIMIT], "error": str(exc)})
                return outcome
            except ModelCallError as exc:
                outcome.update({"error": str(exc), "status": exc.status, "attempts": exc.attempts})
                return outcome
            except AnswerError as exc:
                outcome["error"] = f"unreadable answer: {exc}"
                return outcome
            outcome["verdict"] = verdict
            return outcome

        outcomes = list(await asyncio.gather(*(sample(i) for i in range(config.samples))))
        usage = summarise_calls(completions)
        return self._combine(template, shape, model, outcomes, usage)

    def _read_text(self, shape: AnswerShape, completion: Any, outcome: dict[str, Any]) -> Verdict:
        from ..models import p_yes

        if not self.config.logprobs:
            return shape.read_text(completion.text)
        probability = p_yes(completion.top_logprobs())
        try:
            verdict = shape.read_text(completion.text)
        except AnswerError:
            if probability is None:
                raise
            verdict = Verdict(None, None, completion.text)
        if probability is None:
            outcome["logprobs"] = ("unavailable: the model returned no yes/no token probabilities; "
                                   "value from the parsed answer")
            return verdict
        outcome["p_yes"] = probability
        return Verdict(probability, "yes" if probability >= 0.5 else "no", verdict.raw, verdict.details)

    def _combine(self, template: PromptTemplate, shape: AnswerShape, model: str, outcomes: list[dict[str, Any]],
                 usage: dict[str, Any]) -> Score:
        details: dict[str, Any] = {"template": template.name, "template_hash": template.hash, "model": model}
        good = [o for o in outcomes if "verdict" in o]
        if len(outcomes) == 1:
            only = outcomes[0]
            details.update({k: v for k, v in only.items() if k not in ("verdict", "sample")})
            if "raw" in details:
                details["raw"] = str(details["raw"])[:RAW_LIMIT]
        else:
            details["samples"] = [_sample_details(o) for o in outcomes]
        if not good:
            errors = [o.get("error", "no answer") for o in outcomes]
            failure = Score.failure(errors[0] if len(set(errors)) == 1 else "; ".join(errors))
            failure.details.update(details)
            failure.usage = usage
            return failure
        verdicts: list[Verdict] = [o["verdict"] for o in good]
        vote = self.config.vote
        if vote == "auto":
            vote = "majority" if shape.kind in ("binary", "choice") and not self.config.logprobs else "mean"
        labels = [v.label for v in verdicts if v.label is not None]
        label_counts = Counter(labels)
        value: float | None
        label: str | None = None
        if labels:
            top = max(label_counts.values())
            tied = [lab for lab in _ordered(shape, label_counts) if label_counts[lab] == top]
            label = tied[0]
            if len(tied) > 1:
                details["tie"] = tied
        numbers = [v.value for v in verdicts if v.value is not None]
        if vote == "majority" and label is not None:
            chosen = [v.value for v in verdicts if v.label == label and v.value is not None]
            value = chosen[0] if chosen else None
            if len(details.get("tie", [])) > 1 and numbers:
                value = sum(numbers) / len(numbers)
        else:
            value = sum(numbers) / len(numbers) if numbers else None
        if len(outcomes) > 1:
            if labels:
                agreement = max(label_counts.values()) / len(verdicts)
            else:
                agreement = max(Counter(numbers).values()) / len(verdicts) if numbers else None
            details["agreement"] = agreement
            details["answered"] = len(good)
            details["vote"] = vote
        if len(verdicts) == 1:
            details.update(verdicts[0].details)
        if shape.kind == "score" and len(verdicts) > 1:
            details["raw_score_mean"] = sum(v.details["raw_score"] for v in verdicts) / len(verdicts)
        return Score(value=value, label=label, details=details, usage=usage)


def _ordered(shape: AnswerShape, counts: Counter) -> list[str]:
    order = {label: n for n, label in enumerate(shape.labels)}
    return sorted(counts, key=lambda lab: (order.get(lab, len(order)), lab))


def _sample_details(outcome: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in outcome.items() if k != "verdict"}
    if "raw" in out:
        out["raw"] = str(out["raw"])[:RAW_LIMIT]
    verdict = outcome.get("verdict")
    if verdict is not None:
        out.update({"value": verdict.value, "label": verdict.label})
        out.update(verdict.details)
    return out


# -- building scorer classes ------------------------------------------------------

def _template_from(template: str | Path | PromptTemplate, answer: Any, name: str) -> tuple[str, PromptTemplate | None]:
    """(template name, parsed template or None when it is a name for the library)."""
    if isinstance(template, PromptTemplate):
        return template.name, template
    if isinstance(template, Path) or (isinstance(template, str) and "\n" not in template
                                      and template.endswith(".jinja") and Path(template).is_file()):
        path = Path(template)
        parsed = parse_template(path.read_text(encoding="utf-8"), name=path.stem, path=str(path), source="file")
        return parsed.name, parsed
    text = str(template)
    if text.lstrip().startswith("---"):
        return name, parse_template(text, name=name, source="plugin python")
    if "{{" not in text and "{%" not in text and "\n" not in text.strip():
        return text, None  # a library name
    if answer is None:
        raise ConfigError(f"prompt scorer {name}: a template given as text needs `answer=`")
    from jinja2 import meta
    from jinja2.sandbox import SandboxedEnvironment

    used = meta.find_undeclared_variables(SandboxedEnvironment().parse(text))
    fields = [f for f in TEMPLATE_FIELDS if f in used]
    import yaml

    spec = answer.to_spec() if isinstance(answer, AnswerShape) else answer
    header = yaml.safe_dump({"fields": fields, "answer": spec}, sort_keys=False)
    return name, parse_template(f"---\n{header}---\n{text}", name=name, source="plugin python")


def register_prompt_scorer(name: str, *, template: str | Path | PromptTemplate, answer: Any = None,
                           description: str = "", threshold: float | None = None, higher_is_better: bool = True,
                           version: str = "1", register: Any = None, **defaults: Any) -> type[PromptScorer]:
    """Build a prompt scorer class (and hand it to ``register`` when given).

    ``template`` is a library name (``judge/correctness``), a ``.jinja`` path, a parsed
    template, or template text (with a front-matter header, or plain Jinja2 text plus
    ``answer=``). ``answer`` overrides the template's answer shape: a kind
    (``"binary"``) or a mapping as in front matter. ``defaults`` set config defaults
    (``model=``, ``samples=``...).
    """
    template_name, parsed = _template_from(template, answer, name)
    shape = None
    if answer is not None:
        try:
            shape = answer if isinstance(answer, AnswerShape) else AnswerShape.from_spec(answer)
        except ValueError as exc:
            raise ConfigError(f"prompt scorer {name}: {exc}") from None
    config_class = PromptScorer.Config
    if defaults:
        import dataclasses

        known = {f.name for f in dataclasses.fields(config_class)}
        unknown = sorted(set(defaults) - known)
        if unknown:
            raise ConfigError(f"prompt scorer {name}: unknown option {unknown[0]!r} (known: {', '.join(sorted(known))})")
        fields_with_defaults = []
        for f in dataclasses.fields(config_class):
            if f.name in defaults:
                value = defaults[f.name]
                new = field(default_factory=lambda v=value: v) if isinstance(value, (dict, list)) else field(
                    default=value, metadata=f.metadata)
                fields_with_defaults.append((f.name, f.type, new))
        config_class = dataclasses.make_dataclass("Config", fields_with_defaults, bases=(PromptScorer.Config,))
    attributes: dict[str, Any] = {
        "name": name,
        "description": description or (parsed.description if parsed else "") or f"prompt scorer ({template_name})",
        "template_name": template_name,
        "template": parsed,
        "answer": shape,
        "threshold": threshold,
        "higher_is_better": higher_is_better,
        "version": version,
        "Config": config_class,
    }
    if parsed is not None:
        attributes["requires"] = tuple(f for f in parsed.fields if f != "id")
        kind = (shape or parsed.answer).kind
        if kind in ("binary", "choice"):
            attributes["labels"] = tuple((shape or parsed.answer).labels)
    cls = type(f"PromptScorer_{name.replace('/', '_')}", (PromptScorer,), attributes)
    if register is not None:
        register(cls)
    return cls


def scorer_from_template(template: PromptTemplate) -> type[PromptScorer]:
    """The scorer a template declares with ``scorer:`` in its header (no Python needed)."""
    spec = template.scorer or {}
    name = spec.get("name") or template.name.rsplit("/", 1)[-1]
    threshold = spec.get("threshold")
    if threshold is None and template.answer.kind == "binary":
        threshold = 0.5
    return register_prompt_scorer(name, template=template, description=spec.get("description") or template.description,
                                  threshold=threshold, higher_is_better=spec.get("higher_is_better", True),
                                  version=str(spec.get("version", "1")), **(spec.get("options") or {}))
