"""Prompt scorers: a template plus an answer shape, judged through the model layer.

The core hands each scorer the run's runtime before anything is stored (``setup``): its
judge model, prompt library and model layer. A scorer used outside a run falls back to a
private in-memory layer and the built-in library.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from ..errors import ConfigError
from ..scoring import Score, Scorer
from .answers import LOGPROBS_ANSWERS, AnswerShape
from .ask import Judgement
from .judge import Judge, missing_model_message, resolve_template
from .template import TEMPLATE_FIELDS, PromptTemplate, parse_template

if TYPE_CHECKING:
    from ..protocols import ScorerRuntime

#: (scorer, model) pairs already warned about in this process: the warning is said once.
_WARNED: set[tuple[str, str]] = set()


class PromptScorer(Scorer):
    """Base of every prompt scorer. Subclasses set ``template_name`` (looked up in the
    library; ``template_file``, the file shipped next to the scorer, when the library lacks the
    name) or ``template`` (a parsed template), and optionally ``answer``."""

    executor: ClassVar[str] = "async"
    # Small batches: results are written batch by batch, and a judged case is slow, so an
    # interrupted run keeps nearly every finished judgement as a result (and all as cache).
    batch_size: ClassVar[int] = 8
    template_name: ClassVar[str] = ""
    template_file: ClassVar[Path | None] = None
    template: ClassVar[PromptTemplate | None] = None
    answer: ClassVar[AnswerShape | None] = None

    @dataclass
    class Config:
        model: str | None = field(default=None, metadata={"help": "judge model (litellm model string)"})
        temperature: float | None = field(default=None, metadata={"help": "default 0, or the template's"})
        samples: int = field(default=1, metadata={"help": "judge each case n times"})
        vote: Literal["auto", "majority", "mean"] = field(
            default="auto", metadata={"help": "combine samples: majority label or mean value"})
        reasoning: bool | None = field(default=None, metadata={
            "help": "ask for reasoning before the answer (default: yes, but not on a small local model, "
                    "whose one-word answers are the readable ones)"})
        logprobs: bool = field(default=False, metadata={
            "help": "value from P(yes) (binary answers) or the labels' probabilities (choices with values)"})
        structured: bool = field(default=False, metadata={"help": "ask for a JSON answer (schema)"})
        max_tokens: int | None = field(default=None, metadata={
            "help": "longest answer, in tokens (default: the template's parameters, else the model's)"})
        variables: dict = field(default_factory=dict, metadata={"help": "values for the template's variables"})

        def __post_init__(self) -> None:
            if self.samples < 1:
                raise ValueError("samples must be at least 1")
            if self.temperature is not None and not 0 <= self.temperature <= 2:
                raise ValueError("temperature must be between 0 and 2")

    #: Set by ``setup`` (or by hand, outside a run).
    runtime: ScorerRuntime | None = None
    models: Any = None
    prompts: Any = None

    def __init__(self, config: Any = None, **options: Any) -> None:
        super().__init__(config, **options)
        self._own_layer: Any = None
        #: the run's judge (``runtime.judge``) and its ask options, made by ``setup``
        self._judge: Judge | None = None
        self._run_options: dict[str, Any] | None = None

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
            cached = self._template_from = (library, resolve_template(library, self.template_name,
                                                                       self.template_file))
        return cached[1]

    def answer_shape(self) -> AnswerShape:
        return self.answer or self.prompt_template().answer

    def required_fields(self) -> tuple[str, ...]:
        try:
            return self.prompt_template().case_fields
        except Exception:  # an unreadable template is reported when scoring starts
            return tuple(self.requires)

    def media_inputs(self) -> tuple[str, ...]:
        """Images and audio when its template places the case's media (``{{ media }}``), else none:
        a judge whose prompt would show a text stand-in is refused on a case holding media."""
        try:
            places = self.prompt_template().places_media
        except Exception:  # an unreadable template is reported when scoring starts
            return ()
        return ("image", "audio") if places else ()

    def setup(self, runtime: ScorerRuntime) -> None:
        self.runtime = runtime
        self.prompts = runtime.prompts
        # The model is resolved (and a missing one said) before the template is read.
        self._judge = runtime.judge(self.template or self.template_name, self.config.model, scorer=self.name,
                                    default=self.template_file)
        if self.template is None:
            self._template_from = (self.prompts, self._judge.template)
        self.check_ready()
        # The same for every case of the run: worked out here, not per case.
        self._run_options = self._ask_defaults()

    def judge_model(self) -> str:
        """The model: the run's judge's (set up); outside a run the scorer's ``model``, else the
        model layer's judge model."""
        if self._judge is not None:
            return self._judge.model
        model = self.config.model or getattr(self.models, "judge_model", None)
        if not model:
            raise ConfigError(missing_model_message(self.name or type(self).__name__))
        return model

    def judge_service(self, template: PromptTemplate | None = None) -> Judge:
        """The judge asked for ``template`` (default: the scorer's): the run's, or outside a run one
        on the scorer's own model layer."""
        judge = self._judge or Judge(self.layer, self.judge_model(), self.prompt_template())
        return judge if template is None or template is judge.template else judge.with_template(template)

    def check_ready(self) -> None:
        """Fail before scoring starts: no model (the run's judge was checked by its provider),
        unreadable template, impossible options."""
        self.judge_model()
        if self.answer is None and not self.prompt_template().answer_declared:
            raise ConfigError(f"scorer {self.name}: template {self.prompt_template().name} declares no `answer:`, "
                              "so it is a prompt for a model under test (--prompt), not a judge's")
        shape = self.answer_shape()
        if self.config.logprobs and not shape.reads_logprobs:
            raise ConfigError(f"scorer {self.name}: {LOGPROBS_ANSWERS} (this template answers {shape.kind})")
        self._warn_if_small_model(shape)
        if not shape.gives_value and type(self).ascore is PromptScorer.ascore:  # its value is the judgement's
            raise ConfigError(f"scorer {self.name}: a json answer gives a scorer's value through `value:`, "
                              "naming a number or true/false property of its schema")

    def _warn_if_small_model(self, shape: AnswerShape) -> None:
        """Say once when a judge asks a small local model for what it does poorly: reasoning before
        its answer, or a choice among labels (pairwise judges included)."""
        model = self.judge_model()
        if self.layer().reasons_by_default(model):
            return
        # a choice read from its labels' probabilities (logprobs) needs no reliable wording of the answer
        choice = shape.kind == "choice" and not self.config.logprobs
        asked = "reasoning" if self.config.reasoning else "a choice among labels" if choice else None
        if asked is None or (self.name, model) in _WARNED:
            return
        _WARNED.add((self.name, model))
        import logging

        logging.getLogger("evalyard").warning(
            "evalyard: scorer %s asks the small model %s for %s, which it does unreliably; yes/no judges "
            "(with logprobs=true) suit it, a hosted model suits this one", self.name, model, asked)

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

    def reasoning(self) -> bool:
        """Whether the judge reasons before answering: the scorer's ``reasoning``, else the model's
        habit (a small local model answers in one word, reliably; its reasoning often ends nowhere)."""
        if self.config.reasoning is not None:
            return self.config.reasoning
        return self.layer().reasons_by_default(self.judge_model())

    # -- scoring -------------------------------------------------------------------
    async def ascore(self, case: Any) -> Score:
        judgement = await self.judge(case)
        return judgement.score()

    async def judge(self, case: Any, **overrides: Any) -> Judgement:
        """The judgement of ``case`` with this scorer's template, answer shape and config (what
        subclasses build on: pairwise orders, per-claim checks)."""
        template, options = self._ask_options(overrides)
        return await self.judge_service(template).ask(case, **options)

    def _ask_defaults(self) -> dict[str, Any]:
        config = self.config
        return {"answer": self.answer_shape(), "variables": config.variables, "reasoning": self.reasoning(),
                "structured": config.structured, "logprobs": config.logprobs, "samples": config.samples,
                "vote": config.vote, "params": {"temperature": config.temperature, "max_tokens": config.max_tokens}}

    def _ask_options(self, overrides: dict[str, Any]) -> tuple[PromptTemplate, dict[str, Any]]:
        template = overrides.pop("template", None) or self.prompt_template()
        options = dict(self._run_options if self._run_options is not None else self._ask_defaults())
        options.update(overrides)
        return template, options

    def planned_requests(self, case: Any) -> list[Any] | None:
        """The judge's requests for ``case``, rendered as ``judge`` would send them (``run --plan``).
        None for a subclass that scores otherwise (several steps, a call depending on an answer):
        it says what it would ask by overriding this, or is estimated."""
        if type(self).ascore is not PromptScorer.ascore or type(self).judge is not PromptScorer.judge:
            return None
        return self.planned_judge(case)

    def planned_judge(self, case: Any, **overrides: Any) -> list[Any]:
        """The requests ``judge(case, **overrides)`` would send, rendered and keyed, not sent: what
        a subclass's ``planned_requests`` returns for each judgement its ``ascore`` makes."""
        template, options = self._ask_options(overrides)
        return self.judge_service(template).planned(case, **options)


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
        attributes["requires"] = parsed.case_fields
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
