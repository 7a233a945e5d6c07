"""Ragas' metrics of the retrieved passages (ragas 0.4.3), judged through the judge service.

- ``ragas/context_precision`` (LLMContextPrecisionWithReference) and
  ``ragas/context_precision_without_reference`` (LLMContextPrecisionWithoutReference): one
  verdict per passage, in rank order, from one template (``judge/ragas_context_precision``, as
  Ragas uses one prompt for both): was the passage useful in arriving at the answer (the
  reference, or the response)? A verdict is useful when its integer is not 0 (Ragas'
  ``1 if verdict else 0``). The value is the average precision over the useful passages:
  sum over useful ranks k of (useful in the first k) / k, divided by the number useful; 0 when
  none is. Ragas divides by the number useful plus 1e-10, so its values are within 1e-9.
- ``ragas/context_entity_recall`` (ContextEntityRecall): the entities of the reference and of the
  passages (joined by newlines), one call each with one template; the value is the share of the
  reference's distinct entities that are among the passages' (exact strings, as Ragas' set
  intersection); 0 when the reference names none (Ragas: 0 / (0 + 1e-8)).

- ``ragas/response_relevancy`` (ResponseRelevancy): ``strictness`` questions written from the
  answer in one call (Ragas asks for n completions of one question each in one request), each
  flagged noncommittal; the value is the mean cosine similarity of their embeddings with the
  case's question, times 0 when every question is flagged noncommittal (Ragas' ``np.all``).
  Embeddings: the embedding plugin's bundled all-MiniLM-L6-v2, offline (the default), or any
  embeddings model by name through the model layer (one request for question and questions).

The passages are the case's ``context``, as every judge of this plugin reads them: a case (or a
pipeline's run) whose ``retrieved`` passages all have text and that has no context of its own gets
them as its context in trec_eval's rank order (the order the retrieval scorers and the report
use). Ragas takes ``retrieved_contexts`` as given, so it is handed them in this order. An unreadable verdict or entity list is the case's error (Ragas raises after its
format-fixing calls), with the verdicts read so far in details.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from typing import Any

from evalyard import Case, ConfigError, PromptScorer, Score, Usage

from ..base import JudgeScorer
from ..templates import template_name

REASON_LIMIT = 600


def plan_of(scorer: PromptScorer, asks: list[tuple[Case, str]]) -> list[Any]:
    """The first requests of ``asks`` (a case and a template stem each), rendered as they are sent."""
    return [request for case, stem in asks
            for request in scorer.planned_judge(case, template=scorer.step_template(stem), answer=None,
                                                reasoning=False, structured=False, logprobs=False, samples=1)]


def verdict_value(verdict: Any) -> int | None:
    """A verdict as Ragas' pydantic ``int`` field reads it: an integer, true/false, a float with no
    fraction, or a text of one ("1", " 0 ", "1.0"); None for anything else."""
    if isinstance(verdict, bool):
        return int(verdict)
    if isinstance(verdict, int):
        return verdict
    if isinstance(verdict, float):
        return int(verdict) if verdict.is_integer() else None
    if isinstance(verdict, str):
        text = verdict.strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            number = float(text)
        except ValueError:
            return None
        return int(number) if number.is_integer() else None
    return None


def average_precision(useful: list[int]) -> float:
    """Ragas' average precision of 0/1 verdicts in rank order; 0 when none is useful."""
    found, total = 0, 0.0
    for rank, hit in enumerate(useful, start=1):
        if hit:
            found += 1
            total += found / rank
    return total / found if found else 0.0


class RagasJudge(JudgeScorer):
    """A judge of this family: every step asked once (samples 1), as Ragas asks it."""

    steps: tuple[str, ...] = ()

    @dataclass
    class Config(PromptScorer.Config):
        def __post_init__(self) -> None:
            super().__post_init__()
            if self.samples != 1 or self.logprobs:
                raise ValueError("each step is asked once, as Ragas does (samples: 1, no logprobs)")

    def required_fields(self) -> tuple[str, ...]:
        return self.requires

    def fingerprint_data(self) -> dict[str, Any]:
        data = super().fingerprint_data()
        if self.steps:
            data["steps"] = self.step_hashes(*self.steps)
        return data


class ContextPrecision(RagasJudge):
    name = "context_precision"
    description = ("Ragas' LLM context precision with reference: each retrieved passage judged useful or not for "
                   "reaching the reference answer; the average precision of the useful ones in rank order.")
    template_name = template_name("ragas_context_precision")
    requires = ("input", "reference", "context")
    reads = ("retrieved",)
    threshold = 0.5
    version = "1"

    def answer_of(self, case: Case) -> str:
        return case.reference or ""

    def asks(self, case: Case) -> list[Case]:
        answer = self.answer_of(case)
        return [Case(id=case.id, input=case.input, metadata={"answer": answer, "passage": passage})
                for passage in case.context]

    async def ascore(self, case: Case) -> Score:
        asks = self.asks(case)
        # every passage at once: Ragas asks them one by one and stops at an unreadable one
        judgements = await asyncio.gather(*(self.judge(ask, answer=None, reasoning=False, structured=True,
                                                       logprobs=False, samples=1) for ask in asks))
        usage, verdicts, reasons, error = Usage(), [], [], None
        for rank, judgement in enumerate(judgements, start=1):
            usage = usage + judgement.usage
            if error is not None:
                continue
            answer = judgement.answer if judgement.error is None else None
            value = verdict_value(answer.get("verdict")) if isinstance(answer, dict) else None
            if value is None:
                error = (f"passage {rank}: {judgement.error or 'unreadable verdict ' + repr(answer.get('verdict'))}"
                         " (Ragas raises)")
                continue
            verdicts.append(1 if value else 0)
            reasons.append(str(answer.get("reason", ""))[:REASON_LIMIT])
        # verdicts_of: the report shows each verdict beside its passage
        details: dict[str, Any] = {"verdicts": verdicts, "verdicts_of": "retrieved", "reasons": reasons,
                                   "passages": len(asks)}
        if error is not None:
            return Score(value=None, error=error, details=details, usage=usage.to_dict())
        details["useful"] = sum(verdicts)
        return Score(value=average_precision(verdicts), details=details, usage=usage.to_dict())

    def planned_requests(self, case: Case) -> list[Any] | None:
        return [r for ask in self.asks(case) for r in self.planned_judge(ask, answer=None, reasoning=False,
                                                                         structured=True, logprobs=False, samples=1)]


class ContextPrecisionWithoutReference(ContextPrecision):
    name = "context_precision_without_reference"
    description = ("Ragas' LLM context precision without reference: each retrieved passage judged useful or not for "
                   "reaching the response; the average precision of the useful ones in rank order.")
    requires = ("input", "candidate", "context")

    def answer_of(self, case: Case) -> str:
        return case.candidate or ""


class ContextEntityRecall(RagasJudge):
    name = "context_entity_recall"
    description = ("Ragas' context entity recall: the share of the reference's entities (listed by the judge) that "
                   "are among the entities of the retrieved passages.")
    template_name = template_name("ragas_entities")
    requires = ("reference", "context")
    reads = ("retrieved",)
    threshold = 0.5
    version = "1"

    def texts(self, case: Case) -> tuple[str, str]:
        return case.reference or "", "\n".join(case.context)

    def asks(self, case: Case) -> list[Case]:
        return [Case(id=case.id, metadata={"text": text}) for text in self.texts(case)]

    async def ascore(self, case: Case) -> Score:
        judgements = await asyncio.gather(*(self.judge(ask, answer=None, reasoning=False, structured=True,
                                                       logprobs=False, samples=1) for ask in self.asks(case)))
        usage = sum((j.usage for j in judgements), Usage())
        lists = []
        for of, judgement in zip(("reference", "passages"), judgements):
            if judgement.error is not None:
                return Score(value=None, error=f"entities of the {of}: {judgement.error} (Ragas raises)",
                             details=judgement.details, usage=usage.to_dict())
            lists.append(list(judgement.answer["entities"]))
        of_reference, of_passages = lists
        recalled = set(of_reference) & set(of_passages)
        details = {"reference_entities": of_reference, "context_entities": of_passages,
                   "recalled": sorted(recalled)}
        # over the reference's list as the judge wrote it, repeats included, as Ragas divides
        value = len(recalled) / len(of_reference) if of_reference else 0.0
        return Score(value=value, details=details, usage=usage.to_dict())

    def planned_requests(self, case: Case) -> list[Any] | None:
        return [r for ask in self.asks(case) for r in self.planned_judge(ask, answer=None, reasoning=False,
                                                                         structured=True, logprobs=False, samples=1)]


#: Names of the embedding plugin's bundled model (all-MiniLM-L6-v2, offline), compared case-insensitively.
BUNDLED_EMBEDDINGS = frozenset({"sentence-transformers/all-minilm-l6-v2", "all-minilm-l6-v2", "bundled"})


def cosine(a: list[float], b: list[float]) -> float | None:
    """The cosine of two vectors; None when one is all zeros (Ragas' 0/0 is NaN)."""
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b)) / norms if norms else None


class ResponseRelevancy(RagasJudge):
    name = "response_relevancy"
    description = ("Ragas' response relevancy: questions the judge writes from the answer, the mean cosine of their "
                   "embeddings with the question's; 0 when every one finds the answer noncommittal.")
    template_name = template_name("ragas_relevancy_questions")
    requires = ("input", "candidate")
    threshold = 0.5
    version = "1"

    @dataclass
    class Config(RagasJudge.Config):
        strictness: int = field(default=3, metadata={"help": "how many questions the judge writes (Ragas' strictness)"})
        embeddings: str = field(default="sentence-transformers/all-MiniLM-L6-v2", metadata={
            "help": "the embedding plugin's bundled model (offline), or any embeddings model by name "
                    "(openai/text-embedding-3-small)"})

        def __post_init__(self) -> None:
            super().__post_init__()
            if self.strictness < 1:
                raise ValueError("strictness must be at least 1")

    def bundled(self) -> bool:
        return self.config.embeddings.strip().lower() in BUNDLED_EMBEDDINGS

    def check_ready(self) -> None:
        super().check_ready()
        if self.bundled() and not embedding_plugin_installed():
            raise ConfigError(f"scorer {self.name}: embeddings {self.config.embeddings!r} are the bundled model of the "
                              "evalyard-embedding plugin, which is not installed (pip install evalyard-embedding); or "
                              "name an embeddings model: embeddings: openai/text-embedding-3-small")

    def fingerprint_data(self) -> dict[str, Any]:
        return {**super().fingerprint_data(), "embeddings": self.config.embeddings}

    def ask(self, case: Case) -> Case:
        return Case(id=case.id, candidate=case.candidate, metadata={"n": self.config.strictness})

    async def ascore(self, case: Case) -> Score:
        judgement = await self.judge(self.ask(case), answer=None, reasoning=False, structured=True, logprobs=False,
                                     samples=1)
        usage = judgement.usage
        if judgement.error is not None:
            return Score(value=None, error=f"questions: {judgement.error} (Ragas raises)", details=judgement.details,
                         usage=usage.to_dict())
        generated = list(judgement.answer["questions"])
        questions = [str(q["question"]) for q in generated]
        noncommittal = bool(generated) and all(q["noncommittal"] for q in generated)
        details: dict[str, Any] = {"questions": generated, "noncommittal": noncommittal,
                                   "embeddings": self.config.embeddings}
        if not generated or all(q == "" for q in questions):
            return Score(value=None, error="the judge wrote no question from the answer (Ragas gives NaN)",
                         details=details, usage=usage.to_dict())
        try:
            vectors, more = await self.vectors([case.input or "", *questions])
        except Exception as exc:  # a failed embeddings call or an unloadable model: this case's error
            return Score(value=None, error=f"embeddings: {type(exc).__name__}: {exc}", details=details,
                         usage=usage.to_dict())
        usage = usage + more
        similarities = [cosine(vector, vectors[0]) for vector in vectors[1:]]
        details["similarities"] = similarities
        if any(s is None for s in similarities):
            return Score(value=None, error="an embedding is all zeros, so its cosine is undefined (Ragas gives NaN)",
                         details=details, usage=usage.to_dict())
        value = 0.0 if noncommittal else sum(similarities) / len(similarities)
        return Score(value=value, details=details, usage=usage.to_dict())

    async def vectors(self, texts: list[str]) -> tuple[list[list[float]], Usage]:
        """The texts' embeddings (one request by name; the bundled model in a worker thread) and the calls."""
        if self.bundled():
            return await asyncio.to_thread(bundled_vectors, texts), Usage()
        from evalyard import embed

        vectors, call = await embed(self.layer(), self.config.embeddings, texts)
        return vectors, Usage.of([call])

    def planned_requests(self, case: Case) -> list[Any] | None:
        return self.planned_judge(self.ask(case), answer=None, reasoning=False, structured=True, logprobs=False,
                                  samples=1)


def embedding_plugin_installed() -> bool:
    try:
        import evalyard_embedding  # noqa: F401  (cheap: its heavy modules load on first use)
    except ImportError:
        return False
    return True


def bundled_vectors(texts: list[str]) -> list[list[float]]:
    """Sentence embeddings from the embedding plugin's bundled model, offline."""
    from evalyard_embedding import get_model, sentence_embeddings

    found = sentence_embeddings(get_model("bundled"), texts)
    return [[float(x) for x in found[text].flatten().tolist()] for text in texts]


SCORERS = (ContextPrecision, ContextPrecisionWithoutReference, ContextEntityRecall, ResponseRelevancy)
