"""The Trust-Score scorers: one per axis, and ``trust_score`` with all of them.

Each case's ``details`` holds the facts of ``metrics.Assessor.assess`` (refusal and its ratio,
answerability, the supported vector, per-answer matches, every citation check and entailment
call); ``aggregate`` recomputes the published corpus keys from those details.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from evalyard import JudgeError, Score, Scorer, Usage

from .backends import EntailmentError, make_backend
from .metrics import CASE_USAGE, Assessor, Item, ItemError, corpus_metrics
from .refusal import REFUSAL_PHRASE, REFUSAL_THRESHOLD, refusal_detector
from .text import SentenceSplitter

if TYPE_CHECKING:
    from evalyard import Runtime

log = logging.getLogger("evalyard.trust")


@dataclass
class TrustConfig:
    mode: Literal["em", "em5", "cm"] = field(default="em", metadata={
        "help": "correctness: em (ASQA, answer aliases in the text), em5 (QAMPARI, comma-separated list), "
                "cm (claims entailed by the answer)"})
    entailment: str = field(default="auto", metadata={
        "help": "entailment backend: judge (the judge model), lexical (deterministic stub), a plugin's; "
                "auto = judge when a judge model is configured, else lexical"})
    model: str | None = field(default=None, metadata={"help": "judge model for entailment (default: the run's)"})
    entailment_answer: Literal["structured", "logprobs", "text"] = field(default="structured", metadata={
        "help": "judge verdict from a JSON answer, from P(yes) >= entailment_threshold, or from a text answer"})
    entailment_threshold: float = field(default=0.5, metadata={"help": "P(yes) needed with entailment_answer=logprobs"})
    refusal: str = field(default="fuzzy", metadata={"help": "refusal detector (fuzzy, or a plugin's)"})
    refusal_phrase: str = field(default=REFUSAL_PHRASE, metadata={"help": "the refusal sentence matched fuzzily"})
    refusal_phrases: list[str] = field(default_factory=list, metadata={"help": "more refusal phrasings"})
    refusal_threshold: float = field(default=REFUSAL_THRESHOLD, metadata={
        "help": "a partial ratio above this (0-100) is a refusal"})
    corrected: bool = field(default=False, metadata={
        "help": "fix trust-eval's quirks: [1, 2] citations, [0]/out-of-range ids reported, whole-word EM"})
    at_most_citations: int = field(default=3, metadata={"help": "citations per sentence checked (0: all)"})
    sentences: Literal["auto", "punkt", "builtin"] = field(default="auto", metadata={
        "help": "sentence splitter: NLTK punkt_tab data (exact upstream), builtin Punkt, auto = punkt if installed"})

    def __post_init__(self) -> None:
        if not 0 <= self.refusal_threshold <= 100:
            raise ValueError("refusal_threshold must be between 0 and 100")
        if not 0 <= self.entailment_threshold <= 1:
            raise ValueError("entailment_threshold must be between 0 and 1")
        if self.at_most_citations < 0:
            raise ValueError("at_most_citations must be 0 (all) or more")


class TrustScorer(Scorer):
    """Shared machinery; subclasses choose the axes they compute and report."""

    requires: ClassVar[tuple[str, ...]] = ("candidate", "metadata.answers")
    executor: ClassVar[str] = "async"
    batch_size: ClassVar[int] = 16
    version = "1"
    Config = TrustConfig
    axes: ClassVar[tuple[str, ...]] = ("refusal", "correctness", "citations")

    def __init__(self, config: Any = None, **options: Any) -> None:
        super().__init__(config, **options)
        self.runtime: Runtime | None = None
        self._assessor: Assessor | None = None
        self._backend: Any = None
        self._splitter = SentenceSplitter(self.config.sentences)

    # -- set-up -------------------------------------------------------------------------
    def needs_entailment(self) -> bool:
        return "citations" in self.axes or ("correctness" in self.axes and self.config.mode == "cm")

    def backend_name(self) -> str | None:
        if not self.needs_entailment():
            return None
        name = self.config.entailment
        if name == "auto":
            # Only a judge the user chose: a model some plugin offers by default (a small local
            # one) is no stand-in for the NLI model unless asked for with entailment=judge.
            chosen = self.runtime.user_judge_model() if self.runtime is not None else None
            name = "judge" if self.config.model or chosen else "lexical"
            if name == "lexical":
                log.warning("%s: no judge model configured, so entailment uses the deterministic lexical stub "
                            "(pass --judge-model or entailment=judge for real judgements)", self.name)
        return name

    def setup(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._assessor = None
        self.assessor()

    def assessor(self) -> Assessor:
        if self._assessor is None:
            name = self.backend_name()
            runtime = self.runtime
            if runtime is None:  # used outside a run: a private runtime (the judge has its template file)
                runtime = private_runtime(self.config.model)
                self.runtime = runtime
            self._backend = None if name is None else make_backend(name, self.config, runtime)
            self._splitter.resolved()
            config = self.config
            self._assessor = Assessor(mode=config.mode, corrected=config.corrected,
                                      detector=refusal_detector(config.refusal, config, runtime),
                                      backend=self._backend,
                                      splitter=self._splitter, at_most_citations=config.at_most_citations or None,
                                      citations="citations" in self.axes,
                                      correctness="correctness" in self.axes)
        return self._assessor

    def fingerprint_data(self) -> dict[str, Any]:
        self.assessor()
        data = super().fingerprint_data()
        data["entailment"] = self._backend.fingerprint() if self._backend is not None else None
        data["refusal_detector"] = self.config.refusal
        data["sentence_splitter"] = self._splitter.resolved() if "citations" in self.axes else None
        return data

    # -- one case -------------------------------------------------------------------------
    async def ascore(self, case: Any) -> Score:
        try:
            item = item_from_case(case)
        except ItemError as exc:
            return Score.failure(f"case {case.id}: {exc}")
        spent: list = []
        CASE_USAGE.set(spent)
        try:
            facts = await self.assessor().assess(item)
        except ItemError as exc:
            return Score.failure(f"case {case.id}: {exc}")
        except EntailmentError as exc:
            return Score.failure(JudgeError(str(exc), details=exc.details, usage=_total(spent)))
        if self._backend is not None:
            facts["entailment"] = self._backend.name
        score = self.verdict(facts)
        if score.usage is None:
            score.usage = _total(spent)
        return score

    def verdict(self, facts: dict[str, Any]) -> Score:
        raise NotImplementedError

    def calibration_value(self, score: Score) -> float | None:
        """The mean P(yes) of the judge's entailment calls behind this score (claims for correctness,
        citation checks for citations), when the judge was read by logprobs: a graded value where
        the score itself counts 0/1 verdicts. Otherwise the value."""
        facts = score.details or {}
        calls = []
        if "correctness" in self.axes:
            calls += (facts.get("cm") or {}).get("nli_calls") or []
        if "citations" in self.axes:
            calls += (facts.get("citations") or {}).get("nli_calls") or []
        found = [c["p_yes"] for c in calls if isinstance(c.get("p_yes"), (int, float))]
        return sum(found) / len(found) if found else score.value

    # -- the corpus -----------------------------------------------------------------------
    def aggregate(self, scores: list[Score]) -> dict[str, float]:
        facts = [s.details for s in scores if s.error is None and s.details]
        out = corpus_metrics(facts, refusal="refusal" in self.axes, correctness="correctness" in self.axes,
                             citations="citations" in self.axes)
        out["num_errors"] = sum(1 for s in scores if s.error is not None)
        return out


def _total(spent: list) -> dict[str, Any] | None:
    """The case's usage: its entailment calls' (None when no model was called)."""
    return sum((u for u in spent if u is not None), Usage()).to_dict()


def private_runtime(model: str | None) -> Any:
    from evalyard import Runtime

    return Runtime(judge_model=model)


def item_from_case(case: Any) -> Item:
    """An Item from a case: trust-eval files give ``metadata.docs``; other files may give the
    passages as ``context`` and their labels as ``metadata.answers_found`` (one list per passage)."""
    meta = case.metadata or {}
    answers = meta.get("answers")
    if not isinstance(answers, list) or not answers or not all(
            isinstance(a, list) and all(isinstance(x, str) for x in a) for a in answers):
        raise ItemError("metadata.answers must be a non-empty list of alias lists ([[\"Paris\"], ...])")
    docs = meta.get("docs")
    if docs is None:
        labels = meta.get("answers_found")
        if not isinstance(labels, list) or len(labels) != len(case.context):
            raise ItemError("give metadata.docs (title, text, answers_found) or context passages with "
                            "metadata.answers_found (one 0/1 list per passage)")
        docs = [{"title": "", "text": text, "answers_found": found} for text, found in zip(case.context, labels)]
    if not isinstance(docs, list) or not all(isinstance(d, dict) for d in docs):
        raise ItemError("metadata.docs must be a list of objects (title, text, answers_found)")
    return Item(question=case.input or "", answers=answers, docs=docs, output=case.candidate or "")


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def correctness_value(facts: dict[str, Any]) -> float:
    """The item's plain correctness in its mode (0-1)."""
    mode = facts["mode"]
    if mode == "em":
        return facts["em"]["value"]
    if mode == "em5":
        return facts["em5"]["regular"]["f1_top5"]
    return facts["cm"]["value"]


def calibrated_value(facts: dict[str, Any]) -> float:
    mode = facts["mode"]
    if mode == "em5":
        return facts["em5"]["calib"]["f1_top5"]
    return facts[mode]["calib"]


class TrustScore(TrustScorer):
    name = "trust_score"
    description = ("Trust-Score (trust-eval 0.1.5): refusal groundedness, calibrated correctness and citation "
                   "quality; corpus keys (trust_score, macro_f1, calib_*, *_citation_*) in the aggregate")

    def verdict(self, facts: dict[str, Any]) -> Score:
        # A per-case summary (the paper's Trust-Score is the corpus key `trust_score`): whether the
        # refuse/answer decision fits the documents, plus calibrated correctness and citation F1
        # wherever the item takes part in those corpus metrics.
        grounded = float(facts["refused"] != facts["answerable"])
        parts = [grounded]
        if facts["answerable"] or not facts["refused"]:
            parts.append(calibrated_value(facts) if facts["answerable"] and not facts["refused"] else 0.0)
        citations = facts["citations"]
        if not facts["refused"] and not citations.get("skipped"):
            parts.append(_f1(citations["precision"], citations["recall"]))
        facts["item_components"] = parts
        return Score(value=sum(parts) / len(parts), label="refused" if facts["refused"] else "answered",
                     details=facts)


class TrustRefusal(TrustScorer):
    name = "trust_refusal"
    description = "Refusal detection and groundedness: value 1 when the response refuses (reject_*/answerable_* keys)"
    requires = ("candidate", "metadata.answers")
    labels = ("refused", "answered")
    axes = ("refusal",)

    def verdict(self, facts: dict[str, Any]) -> Score:
        facts["grounded"] = facts["refused"] != facts["answerable"]
        return Score(value=float(facts["refused"]), label="refused" if facts["refused"] else "answered",
                     details=facts)


class TrustCorrectness(TrustScorer):
    name = "trust_correctness"
    description = "Answer correctness (em / em5 / cm) with calibrated and parametric variants (*_str_em, qampari_*, claims_nli)"
    axes = ("refusal", "correctness")

    def verdict(self, facts: dict[str, Any]) -> Score:
        return Score(value=correctness_value(facts), details=facts)


class TrustCitations(TrustScorer):
    name = "trust_citations"
    description = "Citation recall and precision per response, with every entailment call (*_citation_* keys)"
    axes = ("refusal", "citations")

    def verdict(self, facts: dict[str, Any]) -> Score:
        citations = facts["citations"]
        if citations.get("skipped"):
            return Score(value=None, label="no sentences", details=facts)
        return Score(value=_f1(citations["precision"], citations["recall"]), details=facts)


SCORERS = (TrustScore, TrustRefusal, TrustCorrectness, TrustCitations)
