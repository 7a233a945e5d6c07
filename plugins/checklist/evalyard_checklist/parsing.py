"""Reading a judge's checklist answers, and logprob confidence.

Two readings of the same replies:

- **strict** (the original AutoChecklist 0.2.3, for comparisons): JSON found by its three steps
  (the whole text, the first fenced block, first ``{`` to last ``}``); in a batch answer each
  ``answer`` must be exactly ``"YES"`` or ``"NO"`` or the reply is refused; ``question_index``
  accepts ``"1"``; an index given twice takes the last answer.
- **lenient** (the default): the same JSON steps, then ``Qn: yes`` / ``n. no`` lines; YES/NO in
  any case after stripping; an answer that is neither leaves its item unanswered instead of
  refusing the whole reply.

Which items were not answered is the scorer's business (an error, or NO with ``missing=no``).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

YES, NO = "yes", "no"

# Confidence levels, with strict `<` boundaries: (upper bound, answer, level).
LEVELS = ((0.2, NO, "no_10"), (0.4, NO, "no_30"), (0.6, NO, "unsure"), (0.8, YES, "yes_70"))
TOP_LEVEL = (YES, "yes_90")
#: Below this P(yes)+P(no) the first token says nothing about yes or no.
NO_MASS = 1e-10


class ReplyError(ValueError):
    """The reply cannot be read at all (no score for the case)."""


def extract_json(text: str) -> Any:
    """The original's three steps; ReplyError when none gives JSON."""
    stripped = (text or "").strip()
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        pass
    fence = re.search(r"```(?:json)?\s*\n?(.*?)\n?```", stripped, re.DOTALL)
    if fence:
        try:
            return json.loads(fence.group(1).strip())
        except json.JSONDecodeError:
            pass
    start, end = stripped.find("{"), stripped.rfind("}")
    if start >= 0 and end > start:
        try:
            return json.loads(stripped[start:end + 1])
        except json.JSONDecodeError:
            pass
    shown = stripped if len(stripped) <= 200 else stripped[:200] + "..."
    raise ReplyError(f"Could not extract JSON from text: {shown}")


def _index(value: Any, where: str) -> int:
    if isinstance(value, bool):
        raise ReplyError(f"{where}.question_index: Input should be a valid integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[-+]?\d+\s*", value):
        return int(value)
    raise ReplyError(f"{where}.question_index: Input should be a valid integer, got {value!r}")


def _word(value: Any) -> str | None:
    """yes / no from an answer in any case, else None."""
    if not isinstance(value, str):
        return None
    word = value.strip().strip(".!\"'`*").strip().lower()
    return word if word in (YES, NO) else None


def parse_batch(text: str, *, strict: bool, reasoning: bool = False) -> tuple[dict[int, dict[str, Any]], list[str]]:
    """``{1-based index: {"answer", "reasoning"}}`` and notes on what was set aside.

    Strict: any answer other than exactly YES/NO refuses the reply (ReplyError), as the
    original's schema validation does. Lenient: such an answer is set aside (noted)."""
    notes: list[str] = []
    try:
        data = extract_json(text)
    except ReplyError:
        if strict:
            raise
        lines = parse_yes_no_answers(text)
        if not lines:
            raise
        notes.append("read from Qn: lines (no JSON in the reply)")
        return {index + 1: {"answer": answer, "reasoning": reason} for index, answer, reason in lines}, notes
    if not isinstance(data, dict) or not isinstance(data.get("answers"), list):
        raise ReplyError("answers: Field required (a list of {question_index, answer})")
    answers: dict[int, dict[str, Any]] = {}
    for n, entry in enumerate(data["answers"]):
        where = f"answers.{n}"
        if not isinstance(entry, dict):
            if strict:
                raise ReplyError(f"{where}: Input should be an object")
            notes.append(f"{where}: not an object")
            continue
        try:
            index = _index(entry.get("question_index"), where)
        except ReplyError as exc:
            if strict:
                raise
            notes.append(str(exc))
            continue
        raw = entry.get("answer")
        if strict:
            if raw not in ("YES", "NO"):
                raise ReplyError(f"{where}.answer: Input should be 'YES' or 'NO', got {raw!r}")
            if reasoning and not isinstance(entry.get("reasoning"), str):
                raise ReplyError(f"{where}.reasoning: Field required")
            word = raw.lower()
        else:
            word = _word(raw)
            if word is None:
                notes.append(f"{where}: answer {raw!r} is neither YES nor NO")
                continue
        reason = entry.get("reasoning")
        answers[index] = {"answer": word, "reasoning": reason if isinstance(reason, str) else None}  # last wins
    return answers, notes


def parse_item(text: str, *, strict: bool, reasoning: bool = False) -> dict[str, Any] | None:
    """``{"answer", "reasoning"}`` of a one-question reply; None when lenient and no yes/no is given."""
    try:
        data = extract_json(text)
    except ReplyError:
        if strict:
            raise
        word = _word((text or "").strip().split("\n", 1)[0]) if text else None
        return {"answer": word, "reasoning": None} if word else None
    if not isinstance(data, dict) or "answer" not in data:
        if strict:
            raise ReplyError("answer: Field required")
        return None
    raw = data.get("answer")
    if strict:
        if not isinstance(raw, str):
            raise ReplyError(f"answer: Input should be a valid string, got {raw!r}")
        if reasoning and not isinstance(data.get("reasoning"), str):
            raise ReplyError("reasoning: Field required")
        word = YES if raw == "YES" else NO
    else:
        word = _word(raw)
        if word is None:
            return None
    reason = data.get("reasoning")
    return {"answer": word, "reasoning": reason if isinstance(reason, str) else None}


_Q_LINE = re.compile(r"^\s*Q(\d+)\s*:\s*(yes|no)\s*(?:-\s*(.*?))?\s*$", re.IGNORECASE)
_N_LINE = re.compile(r"^\s*(\d+)\.\s*(yes|no)\s*$", re.IGNORECASE)


def parse_yes_no_answers(text: str) -> list[tuple[int, str, str | None]]:
    """Line-based ``Qn: Yes|No [- reason]`` answers, else ``n. Yes|No``: (0-based index, yes|no, reason)."""
    lines = (text or "").splitlines()
    found = []
    for line in lines:
        match = _Q_LINE.match(line)
        if match:
            found.append((int(match.group(1)) - 1, match.group(2).lower(), match.group(3) or None))
    if found:
        return found
    for line in lines:
        match = _N_LINE.match(line)
        if match:
            found.append((int(match.group(1)) - 1, match.group(2).lower(), None))
    return found


# -- logprob confidence ------------------------------------------------------------

def first_token_probs(logprobs: list[dict[str, Any]] | None, *, last_wins: bool = False) -> dict[str, float]:
    """P(yes), P(no) from the first answer token's alternatives: key = token lowercased and
    stripped, value exp(logprob). Tokens that fold to the same key ("Yes", " yes", "YES") add up:
    they are the same answer. ``last_wins`` reproduces AutoChecklist, where the last of them
    replaces the others -- with top tokens ranked by probability, that keeps the least likely
    spelling, so a confident "Yes" reads as a near-zero P(yes)."""
    if not logprobs:
        return {}
    first = logprobs[0]
    top = first.get("top") or {first.get("token"): first.get("logprob")}
    probs: dict[str, float] = {}
    for token, logprob in top.items():
        if token is None or logprob is None:
            continue
        key = str(token).lower().strip()
        probs[key] = math.exp(logprob) if last_wins else probs.get(key, 0.0) + math.exp(logprob)
    return probs


def confidence_level(confidence: float) -> tuple[str, str]:
    """(answer, level) for a confidence, strict `<` at 0.2, 0.4, 0.6 and 0.8."""
    for bound, answer, level in LEVELS:
        if confidence < bound:
            return answer, level
    return TOP_LEVEL


def interpret_probs(probs: dict[str, float]) -> tuple[float, str, str] | None:
    """(confidence, answer, level), or None when yes and no carry no mass (the caller decides:
    the original's 0.5 / NO / unsure, or the reply's text)."""
    p_yes, p_no = probs.get(YES, 0.0), probs.get(NO, 0.0)
    total = p_yes + p_no
    if total < NO_MASS:
        return None
    confidence = p_yes / total
    return (confidence, *confidence_level(confidence))


UNSURE_FALLBACK = (0.5, NO, "unsure")
