"""The data a plugin author works with: Case, Score, Scorer, Generator.

Kept free of heavy imports (no pydantic, no SQL) because every plugin imports
this module at start-up, including for ``evalyard --help``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from .errors import ConfigError, StopRun

if TYPE_CHECKING:
    from .protocols import ScorerRuntime

#: The fields of a case: the one list that loaders, suites and scorers' ``requires`` check against.
#: ``metadata.KEY`` in ``requires`` asks for one metadata key.
CASE_FIELDS = ("id", "input", "candidate", "reference", "context", "metadata", "messages", "tools",
               "expected_tool_calls", "retrieved", "relevant", "reference_contexts", "input_parts")
TEXT_FIELDS = ("input", "candidate", "reference")
#: The optional fields of a case holding a dialogue (checked by ``evalyard.dialogue``): the
#: OpenAI chat messages, the tool schemas the system had, and the reference tool calls.
DIALOGUE_FIELDS = ("messages", "tools", "expected_tool_calls")
#: The optional fields of a case holding a retrieval (checked by ``evalyard.retrieval``): the ranked
#: passages the system retrieved, the relevant doc ids (with grades), the reference passages.
RETRIEVAL_FIELDS = ("retrieved", "relevant", "reference_contexts")
#: The optional field of a case whose input holds media (``evalyard.media``): the input's content
#: parts, each image or audio part naming its bytes by hash; ``input`` is then their text.
MEDIA_FIELDS = ("input_parts",)
#: The optional structured fields, stored together in the case's JSON column only when set.
STRUCTURED_FIELDS = DIALOGUE_FIELDS + RETRIEVAL_FIELDS + MEDIA_FIELDS

#: Keys the platform reads beside a scorer's config (suite files, ``--scorer NAME:key=value``);
#: no scorer's Config may use them, so a user's ``threshold`` always means the pass threshold.
PLATFORM_KEYS = frozenset({"threshold", "batch_size"})


@dataclass(slots=True)
class Case:
    """One thing to evaluate: an input, the candidate output, and what to judge it against."""

    id: str
    input: str | None = None
    candidate: str | None = None
    reference: str | None = None
    context: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    #: which trial of the case this is, in a run with ``--epochs N`` (0 to N-1); None otherwise.
    #: Model calls made while scoring it are that epoch's (``evalyard.models.trial``).
    epoch: int | None = None
    #: a dialogue in the OpenAI chat format: ``{role, content, tool_calls, tool_call_id}`` dicts
    messages: list[dict[str, Any]] | None = None
    #: the tool schemas the system had (``{"type": "function", "function": {name, parameters}}``)
    tools: list[dict[str, Any]] | None = None
    #: the reference trajectory: ``{"name": ..., "arguments": {...}}`` in the order expected
    expected_tool_calls: list[dict[str, Any]] | None = None
    #: the ranked passages retrieved: ``{"id", "text", "score"}`` dicts (``evalyard.retrieval``)
    retrieved: list[dict[str, Any]] | None = None
    #: the relevant doc ids with their grades (TREC qrels: 1 or more is relevant)
    relevant: dict[str, int] | None = None
    #: the passages a right answer needs, as texts
    reference_contexts: list[str] | None = None
    #: the input as OpenAI content parts, when it holds images or audio (``evalyard.media``): text
    #: parts, and media parts naming their bytes by sha256; ``input`` is the text parts joined
    input_parts: list[dict[str, Any]] | None = None
    #: the bytes of the case's media by sha256, from reading its file until the store keeps them
    #: once (never stored with the case, never compared): ``evalyard.media.Media`` values
    media: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    def has(self, name: str) -> bool:
        """Whether the case carries the field ``name`` (``metadata.KEY`` for metadata keys).

        An empty string counts as present (an empty answer is still an answer), and so does an
        empty ``expected_tool_calls`` (a reference saying no tool should be called); None, a
        missing metadata key, an empty context list and an empty conversation do not.
        """
        if name.startswith("metadata."):
            return self.metadata.get(name[len("metadata."):]) is not None
        value = getattr(self, name)
        if name in ("context", "messages"):
            return bool(value)
        return value is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "input": self.input,
            "candidate": self.candidate,
            "reference": self.reference,
            "context": list(self.context),
            "metadata": dict(self.metadata),
            # only when set, so a case without them keeps the suite version it always had
            **{name: getattr(self, name) for name in STRUCTURED_FIELDS if getattr(self, name) is not None},
        }


@dataclass(slots=True)
class Score:
    """One scorer's verdict on one case.

    ``error`` set means the scorer could not score the case: ``value`` is then
    None, never a stand-in 0 or NaN, and statistics count it as an error.
    """

    value: float | None = None
    label: str | None = None
    passed: bool | None = None
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    usage: dict[str, Any] | None = None

    @classmethod
    def failure(cls, error: BaseException | str, **details: Any) -> "Score":
        """The score of a case that could not be scored. A ``JudgeError`` brings its own message,
        details and the usage of the calls that were made."""
        usage = None
        if isinstance(error, JudgeError):
            message = str(error)
            details = {**error.details, **details}
            usage = error.usage_dict()
        elif isinstance(error, BaseException):
            message = f"{type(error).__name__}: {error}".rstrip(": ")
        else:
            message = str(error)
        return cls(value=None, error=message, details=details, usage=usage)


class JudgeError(Exception):
    """A model-graded step gave no verdict (failed call, unreadable answer). Raised from ``ascore``
    (or ``score``), it becomes that case's recorded error, with ``details`` (the raw reply...) and
    ``usage`` (the calls that were made and paid for) kept on the result."""

    def __init__(self, message: str, *, details: dict[str, Any] | None = None, usage: Any = None) -> None:
        super().__init__(message)
        self.details = dict(details or {})
        self.usage = usage

    def usage_dict(self) -> dict[str, Any] | None:
        usage = self.usage
        return usage.to_dict() if hasattr(usage, "to_dict") else usage


class Scorer:
    """Base class for scorers. Subclass, set ``name``, implement ``score`` (or a batch/async variant).

    Class attributes describe the scorer to the platform:

    - ``name``: unique registry name (``exact_match``).
    - ``requires``: case fields that must be present (``metadata.KEY`` for metadata keys).
    - ``reads``: case fields read when present besides ``requires`` (a ranking measure reads
      ``retrieved``, else ``context``): in a run that generates one of them, a case whose
      generation failed is this scorer's error, never scored on the data's own field.
    - ``version``: bump when values change for the same input; stored with every run.
    - ``higher_is_better``: direction used by ``compare`` and thresholds.
    - ``labels``: for categorical scorers, the possible labels.
    - ``threshold``: default pass threshold on ``value`` (None: no pass/fail).
    - ``executor``: where batches run: ``"thread"`` (cheap CPU work, the runner's thread
      pool; ``"inline"``, its old name, still works), ``"process"`` (CPU-heavy pure Python,
      worker processes), ``"async"`` (model calls, the event loop), or an executor a plugin
      registered.
    - ``Config``: a dataclass of typed settings with defaults; values given by
      users are checked and converted before any scoring starts.
    - ``renamed_options``: ``{old: new}`` for config options that were renamed, so the old
      spelling is refused with a message naming the new one.

    Corpus-level metrics (over all of a run's results: ratios, micro averages, pass@k)
    come from ``aggregate``; they are stored with the run and compared like means.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    requires: ClassVar[tuple[str, ...]] = ("candidate",)
    reads: ClassVar[tuple[str, ...]] = ()
    version: ClassVar[str] = "1"
    higher_is_better: ClassVar[bool] = True
    labels: ClassVar[tuple[str, ...]] = ()
    threshold: ClassVar[float | None] = None
    executor: ClassVar[str] = "thread"
    batch_size: ClassVar[int] = 256
    renamed_options: ClassVar[dict[str, str]] = {}

    @dataclass
    class Config:
        pass

    def __init__(self, config: Any = None, **options: Any) -> None:
        if config is None:
            config = self.make_config(options)
        elif options:
            raise TypeError("pass either a Config instance or keyword options, not both")
        self.config = config

    # -- configuration -------------------------------------------------
    @classmethod
    def make_config(cls, values: dict[str, Any] | None = None) -> Any:
        """Build ``Config`` from user values (strings from the CLI or typed YAML values)."""
        values = values or {}
        owner = cls.name or cls.__name__
        for key in values:
            if key in cls.renamed_options:
                raise ConfigError(f"{owner}: config option {key!r} is now called {cls.renamed_options[key]!r}")
            if key in PLATFORM_KEYS:
                raise ConfigError(
                    f"{owner}: {key!r} is not a config option but the platform's {key}: give it beside the "
                    f"config (suite: `{key}:` in the scorer's entry; command line: -s {owner}:{key}=VALUE)")
        return build_config(cls.Config, values, owner=owner)

    def fingerprint_data(self) -> dict[str, Any]:
        """What decides this scorer's values besides the case: stored with every run, and
        compared by ``evalyard compare``. Model-based scorers add their model and the
        hash of their prompt template: a judge the scorer keeps as an attribute
        (``self.judge = runtime.judge(...)``) adds its own, unasked."""
        return {"version": type(self).version, "config": self.config_dict(), **judges_fingerprint(self)}

    def config_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self.config) if dataclasses.is_dataclass(self.config) else {}

    def required_fields(self) -> tuple[str, ...]:
        """Fields each case must carry; override when the config changes them."""
        return tuple(self.requires)

    # -- scoring -------------------------------------------------------
    def score(self, case: Case) -> Score:
        raise NotImplementedError(f"{type(self).__name__} implements neither score() nor score_batch()")

    def score_batch(self, cases: list[Case]) -> list[Score]:
        """Score a batch. The default scores case by case so one failure stays one error."""
        results = []
        for case in cases:
            try:
                results.append(self.score(case))
            except Exception as exc:  # a scorer bug must not sink the batch
                results.append(Score.failure(exc))
        return results

    async def ascore(self, case: Case) -> Score:
        raise NotImplementedError

    async def ascore_batch(self, cases: list[Case]) -> list[Score]:
        import asyncio  # not at module level: every plugin imports this module at start-up

        if type(self).ascore is Scorer.ascore:
            return await asyncio.to_thread(self.score_batch, cases)

        async def one(case: Case) -> Score:
            try:
                return await self.ascore(case)
            except StopRun:  # a clean stop of the whole run, not this case's error
                raise
            except Exception as exc:
                return Score.failure(exc)

        return list(await asyncio.gather(*(one(c) for c in cases)))

    def resources(self) -> dict[str, float]:
        """What one worker running this scorer needs, for executors that place workers on
        machines (a cluster): ``cpu`` (default 1), ``gpu``, ``memory_mb``. Override when the
        config changes it (a sandbox running four children asks for four CPUs)."""
        return {}

    def setup(self, runtime: ScorerRuntime) -> None:
        """Called once per run before anything is stored, with the run's ``evalyard.runtime.Runtime``
        (judge model, prompt library, model layer). Take what the scorer needs and raise
        ``evalyard.ConfigError`` for a configuration that cannot work. The default does nothing."""

    def calibration_value(self, score: Score) -> float | None:
        """The continuous value ``evalyard calibrate`` fits a threshold on (and a calibrated threshold
        applies to): by default ``value``. A scorer whose value is a bare verdict but which knows a
        graded one (a judge's P(yes) kept in ``details``) returns that instead."""
        return score.value

    def planned_requests(self, case: Case) -> "list[Any] | None":
        """The model calls scoring ``case`` would make, rendered but not sent, for ``evalyard run
        --plan``: a list of ``evalyard.PlannedRequest`` (``runtime.models.planned(model, messages,
        params=...)`` makes one exactly as the model layer would send it, cache key included), or
        None when the scorer cannot tell without calling (a second call that depends on the first
        answer). Called after ``setup``; it must not call a model. The default says nothing: an
        async scorer is then estimated from its earlier results, any other is taken to call no model."""
        return None

    def media_inputs(self) -> tuple[str, ...]:
        """The kinds of a case's media (``"image"``, ``"audio"``) this scorer places in the requests
        it sends its models. The default, none: a scorer that calls a model (``media_models``) is
        then refused, before any call, on a case holding media, since its model would judge a
        text stand-in. A multimodal judge (a template that places the media) names what it places."""
        return ()

    def media_models(self) -> list[str]:
        """The models this scorer sends requests to: by default its judges' (the ``Judge``
        attributes it keeps). A model-calling scorer that keeps no judge overrides it."""
        return _judge_models(self)

    def aggregate(self, scores: list[Score]) -> dict[str, float]:
        """Corpus-level metrics over all of a run's scores for this scorer (errors included,
        with ``error`` set). Return metric name -> number; the default has none."""
        return {}

    def close(self) -> None:
        """Release resources (models, worker processes) when a run ends."""


@dataclass(slots=True)
class Generation:
    """What a generator produced for one case: the text, or an error (never an empty stand-in).
    A conversation generator also gives the whole conversation it played (``messages``, OpenAI's
    chat format): stored with the run, it is the case's ``messages`` its scorers see, and ``text``
    is the last answer. A pipeline under test gives the passages it retrieved (``retrieved``, as a
    case holds them): stored likewise, they are the case's ``retrieved`` its scorers see."""

    text: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, Any] | None = None
    error: str | None = None
    messages: list[dict[str, Any]] | None = None
    retrieved: list[dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        # Output no UTF-8 file or database takes (a lone surrogate, which a provider's JSON can
        # escape) is not an answer: it is this generation's error, so storing, scoring and
        # exporting the run never meet it.
        if self.error is None:
            from .valid_text import unstorable_output

            found = unstorable_output(self.text, self.messages, self.retrieved)
            if found is not None:
                self.error = f"the generated {found[0]}: {found[1]}"
                self.text = self.messages = self.retrieved = None


class Generator:
    """Base class for generators: produce text for a case (a candidate output from the model
    under test, a checklist). The runner's generate stage fills missing candidates with one.

    Implement ``generate`` (sync) or ``agenerate`` (async); return the text or a ``Generation``.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    version: ClassVar[str] = "1"
    requires: ClassVar[tuple[str, ...]] = ("input",)
    #: what it makes: ``candidate`` (usable as ``--generator``), or something a plugin's scorer uses
    #: (``checklist``), run by that plugin's own command
    produces: ClassVar[str] = "candidate"
    #: the case fields each generation fills, which scorers may then require of cases that lack
    #: them: ``candidate``; a conversation generator also fills ``messages``, a retrieval pipeline
    #: ``retrieved`` (what a generator fills besides the candidate replaces the case's for scoring)
    fills: ClassVar[tuple[str, ...]] = ("candidate",)

    @dataclass
    class Config:
        pass

    def __init__(self, config: Any = None, **options: Any) -> None:
        self.config = config if config is not None else self.make_config(options)

    @classmethod
    def make_config(cls, values: dict[str, Any] | None = None) -> Any:
        return build_config(cls.Config, values or {}, owner=cls.name or cls.__name__)

    def config_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self.config) if dataclasses.is_dataclass(self.config) else {}

    def fingerprint_data(self) -> dict[str, Any]:
        """As ``Scorer.fingerprint_data``: a judge the generator keeps as an attribute adds its own."""
        return {"version": type(self).version, "config": self.config_dict(), **judges_fingerprint(self)}

    def setup(self, runtime: ScorerRuntime) -> None:
        """As ``Scorer.setup``: called once per run before anything is stored."""

    def required_fields(self) -> tuple[str, ...]:
        """Fields each case must carry for this generator; override when the config changes them."""
        return tuple(self.requires)

    def planned_requests(self, case: Case) -> "list[Any] | None":
        """As ``Scorer.planned_requests``: the calls generating for ``case`` would make, or None."""
        return None

    def media_inputs(self) -> tuple[str, ...]:
        """The kinds of a case's media (``"image"``, ``"audio"``) this generator passes on to the
        system under test. The default, none: a case holding media that this generator would
        fill is refused before any call, rather than its system answering a text stand-in."""
        return ()

    def media_models(self) -> list[str]:
        """The models the media are sent to (each must take them): by default its judges'."""
        return _judge_models(self)

    def generate(self, case: Case) -> "str | Generation":
        raise NotImplementedError(f"{type(self).__name__} implements neither generate() nor agenerate()")

    async def agenerate(self, case: Case) -> "str | Generation":
        import asyncio

        return await asyncio.to_thread(self.generate, case)

    def close(self) -> None:
        """Release resources when a run ends."""


class Fingerprinted:
    """What a scorer keeps that adds to its fingerprint (a judge: its model and template). Defined
    here, subclassed by ``prompting.judge.Judge``, so scoring never imports the prompting layer."""

    def fingerprint(self) -> dict[str, Any]:
        raise NotImplementedError


def _judge_models(owner: Any) -> list[str]:
    """The models of the judges ``owner`` keeps as attributes, in attribute order, once each."""
    models = [getattr(value, "model", None) for _, value in sorted(vars(owner).items())
              if isinstance(value, Fingerprinted)]
    return list(dict.fromkeys(m for m in models if m))


def judges_fingerprint(owner: Any) -> dict[str, Any]:
    """The fingerprints of the judges ``owner`` keeps as attributes: one judge's keys as they are
    (the shape prompt scorers always stored), several by attribute name."""
    judges = {name: value.fingerprint() for name, value in sorted(vars(owner).items())
              if isinstance(value, Fingerprinted)}
    if len(judges) == 1:
        return next(iter(judges.values()))
    return {"judges": judges} if judges else {}


# -- typed configuration ------------------------------------------------

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _convert(value: Any, annotation: Any, where: str) -> Any:
    """Convert ``value`` to ``annotation``; raise ConfigError naming ``where`` on failure."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            if type(None) in args:
                return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(value, arg, where)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0] if errors else f"{where}: invalid value {value!r}")
    if origin is typing.Literal:
        for choice in args:
            if value == choice or (isinstance(value, str) and str(choice) == value):
                return choice
        raise ConfigError(f"{where}: must be one of {', '.join(map(str, args))}, got {value!r}")
    if origin in (list, tuple):
        if isinstance(value, str):
            value = [v.strip() for v in value.split("|")] if value else []
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        item_type = args[0] if args else Any
        return [_convert(v, item_type, where) for v in value]
    if origin is dict or annotation is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        return dict(value)
    if annotation is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
            return value.lower() in _TRUE
        raise ConfigError(f"{where}: expected true or false, got {value!r}")
    if annotation is int:
        if isinstance(value, bool):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        try:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            return int(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: expected an integer, got {value!r}") from None
    if annotation is float:
        if isinstance(value, bool):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: expected a number, got {value!r}") from None
    if annotation is str:
        if isinstance(value, (dict, list)):
            raise ConfigError(f"{where}: expected text, got {value!r}")
        return str(value)
    return value


def build_config(config_class: type, values: dict[str, Any], owner: str = "") -> Any:
    """Instantiate a Config dataclass from loosely typed values, checking every key."""
    hints = typing.get_type_hints(config_class)
    fields = {f.name: f for f in dataclasses.fields(config_class)}
    converted = {}
    for key, value in values.items():
        if key not in fields:
            known = ", ".join(fields) or "none"
            raise ConfigError(f"{owner}: unknown config option {key!r} (known: {known})")
        converted[key] = _convert(value, hints.get(key, Any), f"{owner}.{key}")
    try:
        config = config_class(**converted)
    except ValueError as exc:  # __post_init__ validation
        raise ConfigError(f"{owner}: {exc}") from None
    return config


def config_field_names(config_class: type) -> list[str]:
    return [f.name for f in dataclasses.fields(config_class)] if dataclasses.is_dataclass(config_class) else []


def describe_config(config_class: type) -> list[dict[str, Any]]:
    """Field name, type and default of a Config dataclass, for ``evalyard scorers``."""
    hints = typing.get_type_hints(config_class)
    out = []
    for f in dataclasses.fields(config_class):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            default = f.default_factory()  # type: ignore[misc]
        else:
            default = None
        type_name = getattr(hints.get(f.name), "__name__", None) or str(hints.get(f.name)).replace("typing.", "")
        out.append({"name": f.name, "type": type_name, "default": default, "help": f.metadata.get("help", "")})
    return out
