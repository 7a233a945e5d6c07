"""Ragas' multimodal metrics (ragas 0.4.3, ``_multi_modal_faithfulness.py`` and
``_multi_modal_relevance.py``): one judge call that sees the images, true or false.

- ``ragas/multimodal_faithfulness`` (MultiModalFaithfulness): is the answer backed by the
  context, its images and text passages (any one of them backing it is enough)?
- ``ragas/multimodal_relevance`` (MultiModalRelevance): does the answer, as a reply to the
  question, agree with the images and passages?

The context is what Ragas calls ``retrieved_contexts``, a list whose items are texts or images:
here the case's images (the image parts of its input, then of its messages, in that order) and
its ``context`` passages. The judge is shown the images themselves: the template places them
(``{{ media }}``), the model layer sends the exact bytes, and the media gate refuses the run
before any call when the judge model cannot take images. Audio is not Ragas' and is refused
likewise (a case holding audio is not judged by these two).

The value is 1.0 or 0.0: the reply's ``faithful`` / ``relevance`` read as Ragas reads it (the
first JSON structure in the reply, then pydantic's lax boolean: true/false, 1/0, 1.0/0.0, or
"true", "yes", "on", "t", "y", "1" and their negatives, any case). A reply that cannot be read
gets one repair call (Ragas asks its format-fixing prompt, up to three times); still unreadable,
or a failed call, is the case's error (Ragas raises).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from evalyard import Case, Score

from ..templates import template_name
from .passages import RagasJudge

#: how much of a reply the details keep
REPLY_LIMIT = 300
#: the texts pydantic's lax mode reads as a boolean (compared in lower case, not stripped)
TRUE_TEXTS = frozenset({"1", "on", "t", "true", "y", "yes"})
FALSE_TEXTS = frozenset({"0", "off", "f", "false", "n", "no"})


def first_json(text: str) -> str:
    """The first JSON structure of ``text`` as Ragas finds it (its ``extract_json``): from a
    ```json fence if there is one, the first ``[`` or ``{`` to its balancing bracket; the text
    unchanged when there is none or it is not balanced."""
    fence = text.find("```json")
    if fence != -1:
        text = text[fence:]
    starts = [i for i in (text.find("["), text.find("{")) if i != -1]
    if not starts:
        return text
    start = min(starts)
    opening = text[start]
    closing = "]" if opening == "[" else "}"
    depth = 0
    for end in range(start, len(text)):
        depth += (text[end] == opening) - (text[end] == closing)
        if depth == 0:
            return text[start:end + 1]
    return text


def lax_bool(value: Any) -> bool:
    """A value as pydantic's lax boolean reads it; ValueError for anything else."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in TRUE_TEXTS | FALSE_TEXTS:
        return value.lower() in TRUE_TEXTS
    raise ValueError(f"not a true/false verdict: {value!r}")


def verdict_reader(key: str):
    """The reader of a reply (text -> ``{key: bool}``), ValueError when Ragas could not read it."""

    def read(text: str) -> dict[str, bool]:
        found = first_json(text or "").strip(" \n\r\t`")
        try:
            answer = json.loads(found, strict=False)
        except ValueError:
            raise ValueError("the reply holds no readable JSON object") from None
        if not isinstance(answer, dict) or key not in answer:
            raise ValueError(f"the reply has no {key!r}")
        return {key: lax_bool(answer[key])}

    return read


def image_count(case: Case) -> int:
    """How many images the case holds (its input's and its messages' image parts)."""
    contents = [case.input_parts or []] + [m.get("content") for m in case.messages or ()]
    return sum(1 for content in contents if isinstance(content, list)
               for part in content if isinstance(part, dict) and part.get("type") == "image_url")


class MultimodalJudge(RagasJudge):
    """One structured call whose template places the case's images; the verdict is the value."""

    key: ClassVar[str] = ""
    reads = ("context", "input_parts", "messages")
    threshold = 0.5
    version = "1"

    def media_inputs(self) -> tuple[str, ...]:
        return ("image",)  # Ragas' prompt takes images only: a case with audio is refused

    def judged(self, case: Case) -> Case:
        """What the template reads: the answer (and question), the case's media parts as it
        holds them, its passages (in ``metadata``, so a case without passages is judged on its
        images alone)."""
        return Case(id=case.id, input=case.input or "", candidate=case.candidate, input_parts=case.input_parts,
                    messages=case.messages, metadata={"passages": list(case.context)})

    def _options(self) -> dict[str, Any]:
        return {"answer": None, "reasoning": False, "structured": True, "logprobs": False, "samples": 1,
                "read": verdict_reader(self.key)}

    async def ascore(self, case: Case) -> Score:
        judged = self.judged(case)
        judgement = await self.judge(judged, **self._options())
        details: dict[str, Any] = {"images": image_count(case), "passages": len(case.context),
                                   "reply": (judgement.raw or "")[:REPLY_LIMIT]}
        if judgement.details.get("repaired"):
            details["repaired"] = True
        usage = judgement.usage
        if judgement.error is not None:
            return Score(value=None, error=f"{judgement.error} (Ragas raises)", details=details,
                         usage=usage.to_dict())
        details[self.key] = bool(judgement.value)
        return Score(value=float(judgement.value), details=details, usage=usage.to_dict())

    def planned_requests(self, case: Case) -> list[Any] | None:
        return self.planned_judge(self.judged(case), **{k: v for k, v in self._options().items() if k != "read"})


class MultimodalFaithfulness(MultimodalJudge):
    name = "multimodal_faithfulness"
    description = ("Ragas' multimodal faithfulness: is the answer backed by the case's images and text passages "
                   "(any one backing it is enough)? The judge sees the images; 1 or 0.")
    template_name = template_name("ragas_multimodal_faithfulness")
    requires = ("candidate",)
    key = "faithful"


class MultimodalRelevance(MultimodalJudge):
    name = "multimodal_relevance"
    description = ("Ragas' multimodal relevance: does the answer to the question agree with the case's images and "
                   "text passages? The judge sees the images; 1 or 0.")
    template_name = template_name("ragas_multimodal_relevance")
    requires = ("input", "candidate")
    key = "relevance"


SCORERS = (MultimodalFaithfulness, MultimodalRelevance)
