"""The ``checklist`` scorer: a judge answers each checklist question about the candidate.

Value = the primary metric (pass rate, weighted score or normalized score); ``details`` hold every
item's answer, reasoning, confidence and level, the three aggregates, ``scaled_score_1_5``, the
per-category scores, the checklist itself and how it was scored. Formulas, thresholds and parsing
follow AutoChecklist 0.2.3 (see README: what differs, and how ``missing=no`` reproduces it).
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evalyard import AnswerShape, Case, ConfigError, EvalyardError, InputError, JudgeError, Score, Scorer, Usage

from .data import Checklist, checklist_from, load_checklists_file
from .metrics import PRIMARY_METRICS, category_scores, corpus_metrics, item_aggregates
from .parsing import (UNSURE_FALLBACK, first_token_probs, interpret_probs, parse_batch, parse_item)

if TYPE_CHECKING:
    from evalyard import Runtime

#: Built-in scoring prompts; a template of the same name in a user's prompt directory replaces one.
TEMPLATES = {"batch": "checklist/score_batch", "item": "checklist/score_item",
             "rlcf": "checklist/score_rlcf", "rocketeval": "checklist/score_rocketeval"}
#: where they ship (the judge service reads one from here when no library has its name)
TEMPLATE_DIR = Path(__file__).parent / "templates"
DEFAULT_MAX_TOKENS = 2048
#: AutoChecklist asks for the first answer token's top 5 alternatives (``top_logprobs=5``); more
#: would change its reading, where the last spelling of yes/no listed wins.
TOP_LOGPROBS = 5
RAW_LIMIT = 4000

BATCH_FORMAT = ('Reply with one JSON object and nothing else: {"answers": [{"question_index": 1, "answer": "YES"}, '
                '...]}, one entry per question, question_index counting from 1 as in the list, and answer '
                'exactly "YES" or "NO".')
BATCH_FORMAT_REASONED = ('Reply with one JSON object and nothing else: {"answers": [{"question_index": 1, '
                         '"reasoning": "...", "answer": "YES"}, ...]}, one entry per question, question_index '
                         'counting from 1 as in the list, a short reasoning first, then answer exactly "YES" or "NO".')
ITEM_FORMAT = 'Reply with one JSON object and nothing else: {"answer": "YES"} or {"answer": "NO"}.'
ITEM_FORMAT_REASONED = ('Think it through first, then reply with one JSON object and nothing else: '
                        '{"reasoning": "...", "answer": "YES"} (or "NO").')


def batch_schema(count: int, reasoning: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "object", "properties": {
        "question_index": {"type": "integer", "minimum": 1, "maximum": max(1, count)},
        "answer": {"type": "string", "enum": ["YES", "NO"]}}, "required": ["question_index", "answer"],
        "additionalProperties": False}
    if reasoning:
        entry["properties"] = {"question_index": entry["properties"]["question_index"],
                               "reasoning": {"type": "string"}, "answer": entry["properties"]["answer"]}
        entry["required"] = ["question_index", "reasoning", "answer"]
    return {"type": "object", "properties": {"answers": {"type": "array", "items": entry}},
            "required": ["answers"], "additionalProperties": False}


def item_schema(reasoning: bool) -> dict[str, Any]:
    props: dict[str, Any] = {"answer": {"type": "string", "enum": ["YES", "NO"]}}
    if reasoning:
        props = {"reasoning": {"type": "string"}, **props}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


@dataclass
class ChecklistConfig:
    mode: Literal["batch", "item"] = field(default="batch", metadata={
        "help": "batch: one call for all questions; item: one call per question"})
    primary_metric: Literal["pass", "weighted", "normalized"] = field(default="pass", metadata={
        "help": "the value: pass rate, weighted score, or normalized (mean logprob confidence; turns logprobs on)"})
    capture_reasoning: bool = field(default=False, metadata={"help": "ask the judge for a reason per item"})
    use_logprobs: bool | None = field(default=None, metadata={
        "help": "item mode: confidence P(yes)/(P(yes)+P(no)) from the answer's first token (default: on for "
                "primary_metric=normalized)"})
    template: str | None = field(default=None, metadata={
        "help": "scoring prompt: a template name, or batch | item | rlcf | rocketeval (default: by mode)"})
    model: str | None = field(default=None, metadata={"help": "judge model (default: the run's --judge-model)"})
    temperature: float | None = field(default=None, metadata={
        "help": "judge sampling temperature (default: the template's, else 0)"})
    max_tokens: int | None = field(default=None, metadata={
        "help": "longest judge reply (default: the template's, else 2048; a few tokens on the logprob path)"})
    missing: Literal["error", "no"] = field(default="error", metadata={
        "help": "an item the judge did not answer: error (the case is an error) or no (AutoChecklist's NO)"})
    strict_answers: bool | None = field(default=None, metadata={
        "help": "refuse a reply unless every answer is exactly YES/NO, as AutoChecklist does (default: on "
                "with missing=no)"})
    checklists: str | None = field(default=None, metadata={
        "help": "JSONL of checklists by case_id (evalyard checklist generate -o FILE); beats metadata.checklist"})
    generator: str | None = field(default=None, metadata={
        "help": "pipeline that generates a checklist for cases that have none (tick, rocketeval, rlcf_direct, ...)"})
    generator_model: str | None = field(default=None, metadata={
        "help": "model of the generator (default: the judge model)"})
    generator_options: dict = field(default_factory=dict, metadata={
        "help": "the generator's config (max_items, min_items, temperature, ...)"})

    def __post_init__(self) -> None:
        if self.use_logprobs is None:
            self.use_logprobs = self.primary_metric == "normalized"
        if self.use_logprobs and self.mode != "item":
            raise ValueError("logprob confidence needs mode=item (one question per call); "
                             "primary_metric=normalized implies it")
        if self.strict_answers is None:
            self.strict_answers = self.missing == "no"
        if self.primary_metric not in PRIMARY_METRICS:
            raise ValueError(f"primary_metric must be one of {', '.join(PRIMARY_METRICS)}")


class ChecklistScorer(Scorer):
    name = "checklist"
    description = "a judge answers a checklist of yes/no questions about the candidate (AutoChecklist)"
    requires = ("input", "candidate")
    version = "1"
    executor = "async"
    batch_size = 64
    Config = ChecklistConfig
    #: set by register_checklist_scorer: the template used when the config names none, and its
    #: text when it was given as text or a file (a user's template of that name still wins)
    default_template: str | None = None
    template_text: str | None = None

    runtime: Runtime | None = None
    #: the judge service (``runtime.judge``), set by ``setup``
    judge: Any = None

    def __init__(self, config: Any = None, **options: Any) -> None:
        super().__init__(config, **options)
        self._file_checklists: dict[str, Checklist] = {}
        self._shared_checklist: Checklist | None = None
        self._generator = None
        self._logprob_state: tuple[bool, str | None] | None = None

    # -- set-up ---------------------------------------------------------------------
    def template_name(self) -> str:
        chosen = self.config.template or type(self).default_template
        if chosen is None:
            chosen = "batch" if self.config.mode == "batch" else "item"
        return TEMPLATES.get(chosen, chosen)

    def required_fields(self) -> tuple[str, ...]:
        fields = tuple(self.requires)
        if not self.config.checklists and not self.config.generator:
            fields += ("metadata.checklist",)
        return fields

    def setup(self, runtime: Runtime) -> None:
        self.runtime = runtime
        if type(self).template_text is not None and self.template_name() not in runtime.prompts.names():
            runtime.prompts.add_plugin_template(self.template_name(), type(self).template_text, plugin="python")
        try:
            name = self.template_name()
            shipped = TEMPLATE_DIR / f"{name.removeprefix('checklist/')}.jinja"
            self.judge = runtime.judge(name, self.config.model, scorer=self.name, top_logprobs=TOP_LOGPROBS,
                                       default=shipped if name in TEMPLATES.values() else None)
        except ConfigError:
            raise
        except EvalyardError as exc:  # an unknown or broken template is a configuration error
            raise ConfigError(f"scorer {self.name}: {exc}") from None
        template = self.judge.template
        wanted = "checklist" if self.config.mode == "batch" else "question"
        if wanted not in template.variables:
            raise ConfigError(f"scorer {self.name}: template {template.name} is not a {self.config.mode}-mode "
                              f"checklist prompt (its header must declare `variables: {{{wanted}: ''}}`)")
        if self.config.checklists:
            try:
                self._file_checklists, self._shared_checklist = load_checklists_file(self.config.checklists)
            except InputError as exc:
                raise ConfigError(f"scorer {self.name}: checklists: {exc}") from None
        if self.config.generator:
            from .generators import make_generator

            options = {"model": self.config.generator_model or self.judge_model(), **self.config.generator_options}
            try:
                self._generator = make_generator(self.config.generator, options)
            except ConfigError as exc:
                raise ConfigError(f"scorer {self.name}: generator: {exc}") from None
            if self._generator.level != "instance":
                raise ConfigError(f"scorer {self.name}: generator {self.config.generator} makes one checklist for a "
                                  "whole corpus: run `evalyard checklist generate` and pass checklists=FILE")
            self._generator.bind(runtime)

    def judge_model(self) -> str | None:
        """The judge's model once set up (the judge service resolved it), else the configured one."""
        return self.judge.model if self.judge is not None else self.config.model

    def fingerprint_data(self) -> dict[str, Any]:
        data = super().fingerprint_data()  # with the judge's model and template hash once set up
        data.setdefault("model", self.judge_model())
        if self._generator is not None:
            data["generator"] = self._generator.fingerprint_data()
        if self.config.checklists:
            data["checklists_file"] = str(Path(self.config.checklists).resolve())
        return data

    # -- checklists -------------------------------------------------------------------
    def checklist_for(self, case: Case) -> Checklist | None:
        found = self._file_checklists.get(case.id) or self._shared_checklist
        if found is not None:
            return found
        value = case.metadata.get("checklist")
        if value is None:
            return None
        return checklist_from(value, f"case {case.id!r}: metadata.checklist", base=Path.cwd())

    async def _logprobs_available(self, layer: Any, model: str) -> tuple[bool, str | None]:
        if not self.config.use_logprobs:
            return False, None
        if self._logprob_state is None:
            supported = await asyncio.to_thread(layer.supports_logprobs, model)
            if supported is False:
                self._logprob_state = (False, f"model {model} does not give logprobs; answers are read from the "
                                              "text (structured item calls) and no item has a confidence")
            else:
                self._logprob_state = (True, None)
        return self._logprob_state

    # -- scoring ----------------------------------------------------------------------
    async def ascore(self, case: Case) -> Score:
        usage = Usage()
        generated: dict[str, Any] | None = None
        try:
            checklist = self.checklist_for(case)
        except InputError as exc:
            return Score.failure(str(exc))
        if checklist is None and self._generator is not None:
            made = await self._generator.make_checklist(case)
            usage = made.usage
            if made.error is not None:
                return Score.failure(JudgeError(f"checklist generation failed: {made.error}", usage=usage,
                                                details={"generation": made.details, "raw": made.raw}))
            checklist = made.checklist
            generated = made.details
        if checklist is None:
            return Score.failure(f"case {case.id!r} has no checklist: give metadata.checklist, "
                                 f"-s {self.name}:checklists=FILE or -s {self.name}:generator=PIPELINE")
        score = await score_checklist(self, case, checklist, usage)
        score.details["checklist"] = {**checklist.to_dict(), "generated": generated is not None}
        if generated is not None:
            score.details["generation"] = generated
        return score

    def calibration_value(self, score: Score) -> float | None:
        """The normalized score (mean confidence of the items' yes/no answers) when the judge's
        logprobs gave one: graded where a pass rate over a few items moves in coarse steps."""
        details = score.details or {}
        if details.get("scoring_method") == "normalized" and isinstance(details.get("normalized_score"), (int, float)):
            return float(details["normalized_score"])
        return score.value

    def aggregate(self, scores: list[Score]) -> dict[str, float]:
        return corpus_metrics(scores)


async def score_checklist(scorer: ChecklistScorer, case: Case, checklist: Checklist,
                          usage: Usage | None = None) -> Score:
    """Score one case against one checklist with the scorer's config; never raises for the
    judge's failures (they become the case's error, with the raw replies in details)."""
    config = scorer.config
    model, template = scorer.judge.model, scorer.judge.template
    spent = [usage or Usage()]
    logprobs, fallback = await scorer._logprobs_available(scorer.runtime.models, model)
    base = {"judge_model": model, "template": template.name, "template_hash": template.hash,
            "mode": config.mode, "missing": config.missing, "strict_answers": config.strict_answers}
    if config.use_logprobs:
        base["logprobs_used"] = logprobs
        if fallback:
            base["logprob_fallback"] = fallback
    try:
        if config.mode == "batch":
            items, extra = await _score_batch(scorer, case, checklist, spent)
            scoring_method = "batch"
        else:
            items, extra = await _score_items(scorer, case, checklist, spent, logprobs)
            scoring_method = ("normalized" if config.use_logprobs else
                              "weighted" if config.primary_metric == "weighted" else "item")
    except JudgeError as failure:
        failure.details = {**base, **failure.details}
        failure.usage = sum(spent, Usage())
        return Score.failure(failure)
    usage_dict = sum(spent, Usage()).to_dict()
    details: dict[str, Any] = {**base, "scoring_method": scoring_method, **extra}
    unanswered = [item for item in items if item["answer"] not in ("yes", "no")]
    if unanswered and config.missing == "error":
        details["items"] = items
        details["unanswered"] = [item["id"] for item in unanswered]
        failure = Score.failure(f"the judge left {len(unanswered)} of {len(items)} checklist items unanswered "
                                f"({', '.join(item['id'] for item in unanswered)}); missing=no counts them as NO",
                                **details)
        failure.usage = usage_dict
        return failure
    for item in unanswered:  # missing=no: AutoChecklist's reading
        if config.use_logprobs and logprobs:
            item["confidence"], item["answer"], item["confidence_level"] = UNSURE_FALLBACK
        else:
            item["answer"] = "no"
        item["defaulted"] = True
    aggregates = item_aggregates(items, config.primary_metric)
    details.update(aggregates)
    details["items"] = items
    details["num_items"] = len(items)
    if unanswered:
        details["defaulted_to_no"] = [item["id"] for item in unanswered]
    if any(item.get("category") for item in items):
        details["categories"] = category_scores(items, config.primary_metric)
    return Score(value=aggregates["primary_score"], details=details, usage=usage_dict)


def _item_record(item: Any) -> dict[str, Any]:
    return {"id": item.id, "question": item.question, "weight": item.weight, "category": item.category,
            "answer": None, "confidence": None, "confidence_level": None, "reasoning": None}


def _ask_options(config: Any) -> dict[str, Any]:
    """What every scoring call shares: the one parameter rule (the scorer's config over the template's
    parameters over the model's settings over these defaults) and AutoChecklist's no-repair reading
    when its strict answers are reproduced."""
    return {"params": {"temperature": config.temperature, "max_tokens": config.max_tokens},
            "defaults": {"temperature": 0.0, "max_tokens": DEFAULT_MAX_TOKENS}, "reasoning": False,
            "repair": not config.strict_answers}


def _failure(judgement: Any, what: str) -> str:
    kind = "judge call failed" if judgement.raw is None else "unreadable judge reply"
    return f"{what}{kind}: {judgement.error}"


async def _score_batch(scorer: ChecklistScorer, case: Case, checklist: Checklist,
                       spent: list[Usage]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    config = scorer.config
    reasoning = config.capture_reasoning
    listing = "\n".join(f"Q{n}: {item.question}" for n, item in enumerate(checklist.items, 1))
    shape = AnswerShape(kind="json", schema=batch_schema(len(checklist), reasoning),
                        format=BATCH_FORMAT_REASONED if reasoning else BATCH_FORMAT)
    judgement = await scorer.judge.ask(case, answer=shape, variables={"checklist": listing},
                                       read=lambda text: parse_batch(text, strict=config.strict_answers,
                                                                     reasoning=reasoning),
                                       schema_name="batch_scoring_reasoned" if reasoning else "batch_scoring",
                                       **_ask_options(config))
    spent.append(judgement.usage)
    raw = judgement.raw or ""
    if judgement.error is not None:
        details: dict[str, Any] = {"raw_response": raw[:RAW_LIMIT]} if judgement.raw is not None else {}
        raise JudgeError(_failure(judgement, ""), details={**details, **_call_details(judgement)})
    answers, notes = judgement.answer
    items = []
    for n, item in enumerate(checklist.items, 1):
        record = _item_record(item)
        given = answers.get(n)
        if given is not None:
            record["answer"] = given["answer"]
            record["reasoning"] = given["reasoning"]
        items.append(record)
    ignored = sorted(i for i in answers if not 1 <= i <= len(checklist))
    extra: dict[str, Any] = {"raw_response": raw[:RAW_LIMIT], "num_calls": 1}
    if ignored:
        extra["ignored_indices"] = ignored
    if notes:
        extra["parse_notes"] = notes
    if judgement.details.get("repaired"):
        extra["repaired"] = True
    return items, extra


def _call_details(judgement: Any) -> dict[str, Any]:
    return {key: judgement.details[key] for key in ("status", "attempts") if key in judgement.details}


async def _score_items(scorer: ChecklistScorer, case: Case, checklist: Checklist,
                       spent: list[Usage], logprobs: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    config = scorer.config
    reasoning = config.capture_reasoning and not logprobs
    failures: list[str] = []
    shape = AnswerShape(kind="json", schema=item_schema(reasoning),
                        format=ITEM_FORMAT_REASONED if reasoning else ITEM_FORMAT)

    async def one(item: Any) -> dict[str, Any]:
        record = _item_record(item)
        variables = {"question": item.question, "history": ""}
        if logprobs:
            # The answer is read from the first token's alternatives (AutoChecklist's reading), so
            # the reply is never repaired: the text is only the fallback.
            judgement = await scorer.judge.ask(case, answer=AnswerShape.from_spec("binary"), variables=variables,
                                               logprobs=True, **{**_ask_options(config), "repair": False})
            spent.append(judgement.usage)
            if judgement.raw is not None:
                _read_confidence(record, judgement, config)
                return record
        else:
            judgement = await scorer.judge.ask(case, answer=shape, variables=variables,
                                               read=lambda text: parse_item(text, strict=config.strict_answers,
                                                                            reasoning=reasoning),
                                               schema_name="item_scoring_reasoned" if reasoning else "item_scoring",
                                               **_ask_options(config))
            spent.append(judgement.usage)
            if judgement.raw is not None:
                record["raw"] = judgement.raw[:RAW_LIMIT]
            if judgement.error is None:
                if judgement.answer is not None:
                    record["answer"], record["reasoning"] = judgement.answer["answer"], judgement.answer["reasoning"]
                return record
        failures.append(_failure(judgement, f"{item.id}: "))
        record["error"] = judgement.error
        return record

    items = list(await asyncio.gather(*(one(item) for item in checklist.items)))
    if failures:  # a failed call or a refused reply: no score, as the original raises
        raise JudgeError(failures[0] if len(failures) == 1 else f"{failures[0]} (and {len(failures) - 1} more)",
                         details={"items": items, "num_calls": len(checklist)})
    return items, {"num_calls": len(checklist)}


def _read_confidence(record: dict[str, Any], judgement: Any, config: Any) -> None:
    """Confidence from the first token's alternatives. Where they carry no yes/no mass (or the reply
    has no logprobs), AutoChecklist says 0.5 / NO / unsure; here the item's answer is then read from
    the reply's text (no confidence), and left unanswered when the text is no yes/no either."""
    record["raw"] = (judgement.raw or "")[:RAW_LIMIT]
    probs = first_token_probs(judgement.logprobs, last_wins=config.missing == "no")
    read = interpret_probs(probs)
    if read is not None:
        record["confidence"], record["answer"], record["confidence_level"] = read
        record["confidence_source"] = "logprobs"
        return
    record["confidence_source"] = "none" if judgement.logprobs else "no logprobs in the reply"
    if config.missing == "no":
        return  # filled in with 0.5 / NO / unsure with the other unanswered items
    parsed = parse_item(judgement.raw or "", strict=False)
    if parsed is not None:
        record["answer"] = parsed["answer"]
        record["confidence_source"] = "text (" + record["confidence_source"] + ")"


def make_scorer_class(name: str, *, template: str | None = None, description: str = "",
                      **defaults: Any) -> type[ChecklistScorer]:
    """A ``checklist`` scorer under another name, with its own prompt template and config defaults."""
    import typing

    hints = typing.get_type_hints(ChecklistConfig)
    fields = []
    for f in dataclasses.fields(ChecklistConfig):
        if f.name in defaults:
            value = defaults[f.name]
            default = (dataclasses.field(default_factory=lambda v=value: type(v)(v), metadata=f.metadata)
                       if isinstance(value, (dict, list)) else dataclasses.field(default=value, metadata=f.metadata))
            fields.append((f.name, hints[f.name], default))
    unknown = sorted(set(defaults) - {f.name for f in dataclasses.fields(ChecklistConfig)})
    if unknown:
        raise ConfigError(f"register_checklist_scorer({name!r}): unknown option {unknown[0]!r}")
    config_class = dataclasses.make_dataclass("Config", fields, bases=(ChecklistConfig,)) if fields else ChecklistConfig
    try:
        config_class()
    except ValueError as exc:
        raise ConfigError(f"register_checklist_scorer({name!r}): {exc}") from None
    return type(f"ChecklistScorer_{name}", (ChecklistScorer,), {
        "name": name, "Config": config_class, "default_template": template,
        "description": description or f"checklist scorer with template {template or 'by mode'}"})
