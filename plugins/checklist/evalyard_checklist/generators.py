"""Checklist generators, one per AutoChecklist pipeline, registered through ``register_generators``.

A checklist generator makes checklists, not candidates: the checklist scorer (``generator=``) and
``evalyard checklist generate`` use it; ``evalyard run --generator`` refuses it. Every model call goes
through the judge service (``runtime.judge``): the generator's model is checked by its provider when
the generator is bound, before anything is asked, and its judge's model and template hash are in the
generator's fingerprint; each call goes through the run's model layer (cached, counted). Item limits:
the user's ``max_items`` is honoured (the pipeline's is only the default), a reply with more items is
cut to it (``truncated_from`` in details), and fewer than ``min_items`` is an error for that case.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from evalyard import Case, ConfigError, Generator, InputError, JudgeError, Usage

from .data import Checklist, ChecklistItem
from .parsing import ReplyError, extract_json

if TYPE_CHECKING:
    from evalyard import Runtime

GENERATION_MAX_TOKENS = 2048
CANDIDATE_MAX_TOKENS = 1024
FEEDBACK_BATCH = 100
RAW_LIMIT = 4000


@dataclass
class MadeChecklist:
    checklist: Checklist | None
    details: dict[str, Any]
    usage: Usage
    error: str | None = None
    raw: str | None = None


class ChecklistGenerator(Generator):
    """Base of the checklist generators: config, model calls, limits."""

    level: ClassVar[str] = "instance"
    template: ClassVar[str] = ""
    kind: ClassVar[str] = "questions"
    categories: ClassVar[tuple[str, ...]] = ()
    default_temperature: ClassVar[float] = 0.7
    default_max_items: ClassVar[int | None] = None
    default_min_items: ClassVar[int] = 1
    #: the checklist scorer's config that the pipeline's paper scores with
    default_scorer: ClassVar[dict[str, Any]] = {"mode": "batch", "primary_metric": "pass"}
    #: the templates of the pipeline's further steps (asked of the same model)
    steps: ClassVar[tuple[str, ...]] = ()

    produces = "checklist"  # the core refuses it as --generator; `evalyard checklist generate` runs it

    @dataclass
    class Config:
        model: str = field(default="", metadata={"help": "the model that writes the checklist"})
        temperature: float | None = field(default=None, metadata={"help": "sampling temperature (pipeline default)"})
        max_items: int | None = field(default=None, metadata={"help": "most items (pipeline default); honoured"})
        min_items: int | None = field(default=None, metadata={"help": "fewest items; fewer is an error"})
        template: str | None = field(default=None, metadata={"help": "generation prompt (pipeline default)"})
        max_tokens: int | None = field(default=None, metadata={
            "help": f"longest reply (default: the template's, else {GENERATION_MAX_TOKENS})"})
        candidate_models: list[str] = field(default_factory=list, metadata={
            "help": "contrastive pipelines: models that write candidates when a case has none"})

        def __post_init__(self) -> None:
            if self.max_items is not None and self.max_items < 1:
                raise ValueError("max_items must be at least 1")
            if self.min_items is not None and self.min_items < 0:
                raise ValueError("min_items cannot be negative")

    runtime: Runtime | None = None
    #: the judge service's judge for this pipeline's model and template, set by ``bind`` (its
    #: model and template hash reach the fingerprint through ``Generator.fingerprint_data``)
    judge: Any = None
    #: the judge of each further step, by template name, set by ``bind``
    step_judges: dict[str, Any] = {}

    # -- configuration ------------------------------------------------------------------
    @property
    def temperature(self) -> float:
        return self.default_temperature if self.config.temperature is None else self.config.temperature

    @property
    def max_items(self) -> int | None:
        return self.config.max_items if self.config.max_items is not None else self.default_max_items

    @property
    def min_items(self) -> int:
        wanted = self.config.min_items if self.config.min_items is not None else self.default_min_items
        return min(wanted, self.max_items) if self.max_items is not None else wanted

    @property
    def template_name(self) -> str:
        return self.config.template or self.template

    def setup(self, runtime: Runtime) -> None:
        raise ConfigError(f"{self.name} makes checklists, not candidates: use `evalyard checklist generate SUITE "
                          f"--pipeline {self.name}` or the checklist scorer's generator={self.name}")

    def bind(self, runtime: Runtime) -> None:
        """Take the runtime and the judge of this pipeline's model: ConfigError for what cannot work,
        InputError when the model's provider refuses the model (both before anything is asked)."""
        # The model is the generator's own: never the run's judge model or a plugin's default.
        if not self.config.model:
            raise ConfigError(f"checklist generator {self.name} needs a model (--model MODEL)")
        template = self.template_for(runtime, self.template_name)
        self.judge = runtime.judge(template, self.config.model, scorer=self.name, reasoning=False,
                                   read=extract_json, schema_name="checklist",
                                   params={"temperature": self.config.temperature,
                                           "max_tokens": self.config.max_tokens})
        self.step_judges = {name: self.judge.with_template(self.template_for(runtime, name)) for name in self.steps}
        self.runtime = runtime

    def template_for(self, runtime: Runtime, name: str) -> Any:
        try:
            return runtime.prompts.get(name)
        except Exception as exc:
            raise ConfigError(f"checklist generator {self.name}: {exc}") from None

    def further_templates(self) -> list[Any]:
        """The templates besides the judge's that decide the checklists (its fingerprint names them)."""
        return [judge.template for judge in self.step_judges.values()]

    def fingerprint_data(self) -> dict[str, Any]:
        data = super().fingerprint_data()  # with the judge's model and template once bound
        further = self.further_templates()
        if further:
            data["step_templates"] = {t.name: t.hash for t in further}
        return data

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "level": self.level, "temperature": self.temperature,
                "max_items": self.max_items, "min_items": self.min_items, "template": self.template_name,
                "default_scorer": dict(self.default_scorer), "requires": list(self.required_fields())}

    # -- model calls ----------------------------------------------------------------------
    async def call(self, template_name: str, case: Any, variables: dict[str, Any], spent: list[Usage], *,
                   temperature: float | None = None, sample: int = 0) -> tuple[Any, str]:
        """Ask with ``template_name`` for the JSON answer its header declares. Returns (value, raw
        text); JudgeError when there is none. ``temperature`` is this step's default (the user's
        ``temperature`` still wins, as for every parameter)."""
        judge = self.judge if template_name == self.template_name else self.step_judges[template_name]
        judgement = await judge.ask(case, variables=variables, first_sample=sample,
                                    defaults={"temperature": self.default_temperature if temperature is None
                                              else temperature, "max_tokens": GENERATION_MAX_TOKENS})
        spent.append(judgement.usage)
        judgement.require()
        return judgement.answer, judgement.raw or ""

    def read_items(self, value: Any, where: str = "reply") -> list[ChecklistItem]:
        """Items of a ``{"items": [...]}`` reply (a bare list is accepted too); weights default to 100."""
        rows = value.get("items") if isinstance(value, dict) else value
        if not isinstance(rows, list):
            raise ReplyError(f"{where}: expected {{\"items\": [...]}}")
        items = []
        for row in rows:
            if isinstance(row, str):
                row = {"question": row}
            if not isinstance(row, dict) or not isinstance(row.get("question"), str) or not row["question"].strip():
                continue
            # Only what the pipeline asks for is read: a stray field of a reply does not leak in.
            weight = row.get("weight", 100) if self.kind == "weighted" else 100
            try:
                weight = min(100.0, max(0.0, float(weight)))
            except (TypeError, ValueError):
                weight = 100.0
            category = row.get("category") if self.kind == "categorized" else None
            if category is not None and category not in self.categories:
                category = None
            meta = {k: row[k] for k, kind in (("sources", "sourced"), ("sub_dimension", "dimension"))
                    if k in row and self.kind == kind}
            items.append(ChecklistItem(row["question"].strip(), weight, category or None, "", meta))
        return items

    def finish(self, items: list[ChecklistItem], details: dict[str, Any], spent: list[Usage],
               raw: str | None, case_input: str | None = None) -> MadeChecklist:
        """Apply the item limits and make the checklist (or the error)."""
        usage = sum(spent, Usage())
        details = {"pipeline": self.name, "model": self.config.model, "template": self.template_name,
                   "temperature": self.temperature, "max_items": self.max_items, "min_items": self.min_items,
                   "cached": bool(usage.calls) and usage.cache_hits == usage.calls, **details}
        if self.max_items is not None and len(items) > self.max_items:
            details["truncated_from"] = len(items)
            items = items[:self.max_items]
        checklist = Checklist(items, source_method=self.name, generation_level=self.level, input=case_input,
                              metadata={"model": self.config.model})
        if len(items) < self.min_items:
            details["checklist"] = checklist.to_dict()
            return MadeChecklist(None, details, usage,
                                 f"{self.name} made {len(items)} items, fewer than min_items={self.min_items}", raw)
        return MadeChecklist(checklist, details, usage, None, raw)

    async def make_checklist(self, case: Case) -> MadeChecklist:
        """One checklist for one case (instance-level pipelines); failures are returned, not raised."""
        spent: list[Usage] = []
        raw = None
        try:
            variables, extra = await self.variables_for(case, spent)
            variables.update({"max_items": self.max_items or 20, "min_items": self.min_items})
            value, raw = await self.call(self.template_name, case, variables, spent)
            items = self.read_items(value)
        except (JudgeError, ReplyError, InputError, ValueError) as exc:
            return MadeChecklist(None, {"pipeline": self.name, "model": self.config.model}, sum(spent, Usage()),
                                 f"{type(exc).__name__}: {exc}", raw[:RAW_LIMIT] if raw else None)
        return self.finish(items, extra, spent, raw, case.input)

    async def variables_for(self, case: Case, spent: list[Usage]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Template variables beyond the case's fields, and details to keep."""
        history = case.metadata.get("history")
        return ({"history": history} if isinstance(history, str) and history else {}), {}

    async def generate_corpus(self, cases: list[Case]) -> MadeChecklist:
        raise NotImplementedError

    async def agenerate(self, case: Case) -> Any:  # reached only by a caller that skipped setup()
        raise ConfigError(f"{self.name} makes checklists, not candidates")


# -- instance-level pipelines -------------------------------------------------------------

RLCF_SCORER = {"mode": "item", "primary_metric": "weighted", "template": "rlcf"}


def pipeline(base: type, name: str, description: str, **attributes: Any) -> type:
    """A pipeline that differs from its base only in data (inputs, template, limits, scorer)."""
    attributes.setdefault("template", f"checklist/gen_{name}")
    title = "".join(part.title() for part in name.split("_"))
    return type(title, (base,), {"name": name, "description": f"checklist: {description}", "__module__": __name__,
                                 **attributes})


Tick = pipeline(ChecklistGenerator, "tick", "TICK yes/no questions from the instruction (instance; batch -> pass)",
                requires=("input",), default_temperature=0.7, default_max_items=8, default_min_items=2)
RocketEval = pipeline(ChecklistGenerator, "rocketeval",
                      "RocketEval key-content questions from input + reference (instance; item + logprobs)",
                      requires=("input", "reference"), default_temperature=0.7, default_max_items=10,
                      default_scorer={"mode": "item", "use_logprobs": True, "primary_metric": "normalized",
                                      "template": "rocketeval"})
RlcfDirect = pipeline(ChecklistGenerator, "rlcf_direct",
                      "RLCF weighted criteria from input + reference (instance; item -> weighted)",
                      requires=("input", "reference"), kind="weighted", default_temperature=0.0, default_max_items=7,
                      default_scorer=RLCF_SCORER)


class Contrastive(ChecklistGenerator):
    """Candidates from ``metadata.candidates`` (a list), else written by ``candidate_models``:
    several models answer once each at 0.7; one model answers 4 times at 0.9."""

    default_temperature = 0.0
    #: one judge per candidate model, in the config's order, set by ``bind`` (the models are in the
    #: config, the candidate template among the fingerprint's ``step_templates``)
    candidate_judges: tuple[Any, ...] = ()

    def bind(self, runtime: Runtime) -> None:
        super().bind(runtime)
        if self.config.candidate_models:
            template = self.template_for(runtime, "checklist/gen_candidate")
            self.candidate_judges = tuple(runtime.judge(template, model, scorer=self.name)
                                          for model in self.config.candidate_models)

    def further_templates(self) -> list[Any]:
        steps = super().further_templates()
        return steps + [self.candidate_judges[0].template] if self.candidate_judges else steps

    async def candidates(self, case: Case, spent: list[Usage]) -> tuple[list[str], str]:
        given = case.metadata.get("candidates")
        if isinstance(given, list) and given and all(isinstance(c, str) for c in given):
            return list(given), "given"
        if given is not None and not isinstance(given, dict):
            raise InputError(f"case {case.id!r}: metadata.candidates must be a list of texts")
        judges = self.candidate_judges
        if not judges:
            raise InputError(f"case {case.id!r}: {self.name} needs candidates: metadata.candidates or the "
                             "generator's candidate_models")
        if len(judges) == 1:
            calls = [(judges[0], 0.9, i) for i in range(4)]
        else:
            calls = [(j, 0.7, 0) for j in judges]
        made = await asyncio.gather(*(judge.ask(case, first_sample=i, defaults={
            "temperature": t, "max_tokens": CANDIDATE_MAX_TOKENS}) for judge, t, i in calls))
        for judgement in made:
            spent.append(judgement.usage)
            judgement.require("candidate")
        return [j.answer for j in made], "generated"

    async def variables_for(self, case: Case, spent: list[Usage]) -> tuple[dict[str, Any], dict[str, Any]]:
        candidates, origin = await self.candidates(case, spent)
        return {"candidates": candidates}, {"candidates": candidates, "candidates_from": origin}


RlcfCandidate = pipeline(Contrastive, "rlcf_candidate",
                         "RLCF weighted criteria from input + reference + candidates (instance; item -> weighted)",
                         requires=("input", "reference"), kind="weighted", default_max_items=7,
                         default_scorer=RLCF_SCORER)
RlcfCandidatesOnly = pipeline(Contrastive, "rlcf_candidates_only",
                              "RLCF weighted criteria from input + candidates (instance; item -> weighted)",
                              requires=("input",), kind="weighted", default_max_items=7, default_scorer=RLCF_SCORER)


class OpenRubrics(Contrastive):
    """Rubric items of two kinds: the prompt's explicit requirements and general principles."""

    requires = ("input",)
    kind = "categorized"
    categories = ("hard_rule", "principle")


class OpenRubricsPairwise(OpenRubrics):
    name = "openrubrics_pairwise"
    description = "checklist: OpenRubrics hard rules + principles from chosen vs rejected (instance; batch -> pass)"
    template = "checklist/gen_openrubrics_pairwise"
    default_max_items = 15

    async def variables_for(self, case: Case, spent: list[Usage]) -> tuple[dict[str, Any], dict[str, Any]]:
        pair = case.metadata.get("candidates") if isinstance(case.metadata.get("candidates"), dict) else case.metadata
        chosen, rejected = pair.get("chosen"), pair.get("rejected")
        if not isinstance(chosen, str) or not isinstance(rejected, str):
            candidates, origin = await self.candidates(case, spent)
            if len(candidates) < 2:
                raise InputError(f"case {case.id!r}: {self.name} needs metadata.chosen and metadata.rejected")
            chosen, rejected = candidates[0], candidates[-1]
        return ({"chosen": chosen, "rejected": rejected, "passages": list(case.context)},
                {"chosen": chosen, "rejected": rejected})


class OpenRubricsListwise(OpenRubrics):
    name = "openrubrics_listwise"
    description = "checklist: OpenRubrics hard rules + principles from ranked candidates (instance; batch -> pass)"
    template = "checklist/gen_openrubrics_listwise"
    default_max_items = 20

    async def variables_for(self, case: Case, spent: list[Usage]) -> tuple[dict[str, Any], dict[str, Any]]:
        candidates, origin = await self.candidates(case, spent)
        return {"candidates": candidates, "passages": list(case.context)}, {"candidates_from": origin}


# -- corpus-level pipelines ---------------------------------------------------------------

class CorpusGenerator(ChecklistGenerator):
    level = "instance"  # overridden below; corpus generators make one checklist for all cases

    async def make_checklist(self, case: Case) -> MadeChecklist:
        raise ConfigError(f"{self.name} makes one checklist for a corpus")


class Feedback(CorpusGenerator):
    name = "feedback"
    level = "corpus"
    description = ("checklist: questions covering reviewers' feedback (metadata.feedback of every case), "
                   "deduplicated, tagged and selected (corpus; batch -> pass)")
    requires = ("metadata.feedback",)
    template = "checklist/gen_feedback"
    steps = ("checklist/gen_feedback_merge", "checklist/gen_feedback_tag")
    kind = "sourced"
    default_temperature, default_max_items = 0.7, 20

    @dataclass
    class Config(ChecklistGenerator.Config):
        domain: str = field(default="", metadata={"help": "what the responses are about"})
        dedup: str = field(default="auto", metadata={
            "help": "auto | embedding | text | off: merge near-duplicates (embedding: the embedding plugin's "
                    "bundled model, cosine >= threshold)"})
        dedup_threshold: float = field(default=0.85, metadata={"help": "cosine at which items are merged"})
        tag: bool = field(default=True, metadata={"help": "drop items the model tags as not general"})
        alpha: float = field(default=0.5, metadata={"help": "selector: weight of coverage against diversity"})
        length_penalty: float = field(default=0.0005, metadata={"help": "selector: cost per selected item"})
        beam: int = field(default=5, metadata={"help": "selector: beam width"})

    async def generate_corpus(self, cases: list[Case]) -> MadeChecklist:
        from .refiners import deduplicate, select, tag_general

        observations: list[str] = []
        for case in cases:
            value = case.metadata.get("feedback")
            observations.extend([value] if isinstance(value, str) else [v for v in value or [] if isinstance(v, str)])
        spent: list[Usage] = []
        details: dict[str, Any] = {"observations": len(observations)}
        if not observations:
            return MadeChecklist(None, details, Usage(), "feedback needs metadata.feedback in the cases")
        raw = None
        try:
            items: list[ChecklistItem] = []
            for start in range(0, len(observations), FEEDBACK_BATCH):
                batch = observations[start:start + FEEDBACK_BATCH]
                value, raw = await self.call(self.template_name, {"id": None}, {
                    "domain": self.config.domain, "observations": batch, "max_items": self.max_items or 20},
                    spent)
                for item in self.read_items(value):
                    sources = [start + s for s in item.metadata.get("sources", []) if isinstance(s, int)
                               and 0 <= s < len(batch)]
                    items.append(ChecklistItem(item.question, item.weight, item.category, "",
                                               {**item.metadata, "sources": sources}))
            details["generated"] = len(items)
            items, details["dedup"] = await deduplicate(self, items, spent)
            if self.config.tag:
                items, details["tagged_out"] = await tag_general(self, items, spent)
            if self.max_items is not None and len(items) > self.max_items:
                items, details["selection"] = await select(self, items, len(observations))
        except (JudgeError, ReplyError, ValueError) as exc:
            return MadeChecklist(None, details, sum(spent, Usage()), f"{type(exc).__name__}: {exc}", raw)
        return self.finish(items, details, spent, raw)


class CheckEval(CorpusGenerator):
    name = "checkeval"
    level = "corpus"
    description = "checklist: CheckEval questions per evaluation dimension (corpus; batch -> pass)"
    requires = ()
    template = "checklist/gen_checkeval"
    steps = ("checklist/gen_checkeval_filter",)
    kind = "dimension"
    default_temperature = 0.7
    PER_SUB = {"seed": 2, "elaboration": 5, "diversification": 4, "combined": 5}

    @dataclass
    class Config(ChecklistGenerator.Config):
        dimensions: list = field(default_factory=list, metadata={
            "help": "[{name, definition, sub_dimensions}] (or a JSON/YAML file path in dimensions_file)"})
        dimensions_file: str | None = field(default=None, metadata={"help": "file holding the dimensions"})
        augmentation: str = field(default="seed", metadata={
            "help": "seed (2 per sub-dimension) | elaboration (5) | diversification (4) | combined"})
        filter: bool = field(default=False, metadata={"help": "drop questions whose YES does not mean better"})
        dedup: str = field(default="auto", metadata={"help": "auto | embedding | text | off"})
        dedup_threshold: float = field(default=0.85, metadata={"help": "cosine at which items are merged"})

        def __post_init__(self) -> None:
            super().__post_init__()
            if self.augmentation not in ("seed", "elaboration", "diversification", "combined"):
                raise ValueError("augmentation must be seed, elaboration, diversification or combined")

    def dimensions(self) -> list[dict[str, Any]]:
        dims = list(self.config.dimensions)
        if self.config.dimensions_file:
            import yaml

            try:
                loaded = yaml.safe_load(open(self.config.dimensions_file, encoding="utf-8"))
            except (OSError, yaml.YAMLError) as exc:
                raise ConfigError(f"checkeval: cannot read dimensions_file: {exc}") from None
            dims.extend(loaded if isinstance(loaded, list) else (loaded or {}).get("dimensions", []))
        out = []
        for n, dim in enumerate(dims):
            if not isinstance(dim, dict) or not isinstance(dim.get("name"), str):
                raise ConfigError(f"checkeval: dimension {n + 1} needs a name (and definition, sub_dimensions)")
            subs = dim.get("sub_dimensions") or [dim["name"]]
            out.append({"name": dim["name"], "definition": str(dim.get("definition") or ""),
                        "sub_dimensions": [str(s) for s in subs]})
        if not out:
            raise ConfigError("checkeval needs dimensions: [{name, definition, sub_dimensions}]")
        return out

    def bind(self, runtime: Runtime) -> None:
        super().bind(runtime)
        self.dimensions()

    async def generate_corpus(self, cases: list[Case]) -> MadeChecklist:
        from .refiners import deduplicate, keep_passing

        spent: list[Usage] = []
        details: dict[str, Any] = {"augmentation": self.config.augmentation}
        raw = None
        per_sub = self.PER_SUB[self.config.augmentation]
        try:
            async def one(dim: dict[str, Any]) -> list[ChecklistItem]:
                nonlocal raw
                value, raw = await self.call(self.template_name, {"id": None}, {
                    "dimension": dim["name"], "definition": dim["definition"],
                    "sub_dimensions": dim["sub_dimensions"], "per_sub_dimension": per_sub,
                    "strategy": self.config.augmentation}, spent)
                made = [ChecklistItem(i.question, i.weight, dim["name"], "", i.metadata) for i in self.read_items(value)]
                if self.config.filter:
                    made, dropped = await keep_passing(self, dim["name"], made, spent)
                    details.setdefault("filtered_out", []).extend(dropped)
                return made

            per_dimension = await asyncio.gather(*(one(d) for d in self.dimensions()))
            items = [item for group in per_dimension for item in group]
            details["generated"] = len(items)
            items, details["dedup"] = await deduplicate(self, items, spent)
        except (JudgeError, ReplyError, ValueError) as exc:
            return MadeChecklist(None, details, sum(spent, Usage()), f"{type(exc).__name__}: {exc}", raw)
        return self.finish(items, details, spent, raw)


class InteractEval(CorpusGenerator):
    name = "interacteval"
    level = "corpus"
    description = ("checklist: InteractEval questions from evaluators' attributes (metadata.attributes), "
                   "components -> key + sub-questions -> validation (corpus; batch -> pass, 1-5 scale)")
    requires = ("metadata.attributes",)
    template = "checklist/gen_interacteval_questions"
    steps = ("checklist/gen_interacteval_components", "checklist/gen_interacteval_validate")
    default_temperature = 0.7
    VALIDATION_TEMPERATURE = 0.5
    MAX_COMPONENTS = 5

    @dataclass
    class Config(ChecklistGenerator.Config):
        dimension: str = field(default="", metadata={"help": "the dimension evaluated (else metadata.dimension)"})
        rubric: str = field(default="", metadata={"help": "the dimension's rubric"})

    async def generate_corpus(self, cases: list[Case]) -> MadeChecklist:
        dimension = self.config.dimension or next(
            (c.metadata["dimension"] for c in cases if isinstance(c.metadata.get("dimension"), str)), "")
        attributes: list[str] = []
        samples: list[str] = []
        for case in cases:
            value = case.metadata.get("attributes")
            attributes.extend([value] if isinstance(value, str) else [a for a in value or [] if isinstance(a, str)])
            sample = case.metadata.get("sample_context") or case.metadata.get("source")
            if isinstance(sample, str) and len(samples) < 3:
                samples.append(sample)
        spent: list[Usage] = []
        details: dict[str, Any] = {"dimension": dimension, "attributes": len(attributes)}
        if not attributes or not dimension:
            return MadeChecklist(None, details, Usage(),
                                 "interacteval needs metadata.attributes in the cases and a dimension")
        raw = None
        try:
            value, raw = await self.call("checklist/gen_interacteval_components", {"id": None}, {
                "dimension": dimension, "rubric": self.config.rubric, "attributes": attributes, "samples": samples},
                spent)
            components = [c for c in (value.get("components") if isinstance(value, dict) else None) or []
                          if isinstance(c, dict) and isinstance(c.get("name"), str)][:self.MAX_COMPONENTS]
            if not components:
                raise ReplyError("no components in the reply")
            details["components"] = [c["name"] for c in components]

            async def questions(component: dict[str, Any]) -> list[ChecklistItem]:
                found, _ = await self.call(self.template_name, {"id": None}, {
                    "dimension": dimension, "component": component["name"],
                    "attributes": [str(a) for a in component.get("attributes") or []]}, spent)
                return [ChecklistItem(i.question, i.weight, dimension, "", {"component": component["name"]})
                        for i in self.read_items(found)[:4]]  # one key question and two or three sub-questions

            drafted = [i for group in await asyncio.gather(*(questions(c) for c in components)) for i in group]
            details["drafted"] = len(drafted)
            value, raw = await self.call("checklist/gen_interacteval_validate", {"id": None}, {
                "dimension": dimension, "rubric": self.config.rubric, "questions": [i.question for i in drafted]},
                spent, temperature=self.VALIDATION_TEMPERATURE)
            items = [ChecklistItem(i.question, i.weight, dimension, "", i.metadata) for i in self.read_items(value)]
        except (JudgeError, ReplyError, ValueError) as exc:
            return MadeChecklist(None, details, sum(spent, Usage()), f"{type(exc).__name__}: {exc}", raw)
        return self.finish(items, details, spent, raw)


GENERATOR_CLASSES: tuple[Any, ...] = (
    Tick, RocketEval, RlcfDirect, RlcfCandidate, RlcfCandidatesOnly, OpenRubricsPairwise, OpenRubricsListwise,
    Feedback, CheckEval, InteractEval)
PIPELINES = {cls.name: cls for cls in GENERATOR_CLASSES}


def make_generator(name: str, options: dict[str, Any]) -> ChecklistGenerator:
    bare = name.split("/", 1)[1] if name.startswith("checklist/") else name
    cls = PIPELINES.get(bare)
    if cls is None:
        raise ConfigError(f"unknown checklist pipeline {name!r} (known: {', '.join(PIPELINES)})")
    return cls(cls.make_config(options))
