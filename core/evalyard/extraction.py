"""The answer as a user reads it: declared steps that turn what a model wrote into what a scorer
reads (the code in a Markdown fence, the text after ``####``, a regex group, a JSON field, the
answer without a reasoning model's ``<think>`` block).

A step is ``NAME`` or ``NAME:ARGUMENT``, the argument taken as written (a regex may hold commas
and ``=``); steps chain in the order given. A step that finds nothing raises
``ExtractionFailed``: the case's error for that scorer, never an empty answer scored 0.

- ``code`` / ``code:LANG``: the first fenced block (```` ``` ```` or ``~~~``), of language LANG when
  given (else the first block without a language); an answer without any fence is taken as
  code as it is (what a reader would run), an answer with fences but none of LANG finds nothing.
- ``regex:PATTERN``: the first match (Python ``re``, multi-line and dot-matches-newline off);
  its first group when the pattern has groups, else the whole match.
- ``after:MARKER``: the text after the last MARKER (``after:####`` for GSM8K), stripped.
- ``json:PATH``: the answer parsed as JSON (or the first fenced JSON block), then ``PATH``
  followed through objects and lists (``answer``, ``result.items.0``); a non-text value is
  given as JSON text.
- ``drop_reasoning``: ``<think>...</think>`` (and ``<thinking>``, ``<reasoning>``) blocks
  removed; a reasoning block that never closes leaves no answer, which finds nothing.
- ``strip``: surrounding white space removed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Callable, Sequence

from .errors import InputError

#: step name -> whether it takes an argument (required)
STEPS: dict[str, bool] = {"code": False, "regex": True, "after": True, "json": True, "drop_reasoning": False,
                          "strip": False}

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^\s`]*)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.MULTILINE | re.DOTALL)
_REASONING = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_OPEN_REASONING = re.compile(r"<(think|thinking|reasoning)>", re.IGNORECASE)


class ExtractionFailed(ValueError):
    """The step found nothing in the answer."""


@dataclass(frozen=True)
class Extraction:
    """A chain of steps (``("drop_reasoning", "code:python")``) and how to apply it."""

    steps: tuple[str, ...]

    @property
    def spec(self) -> list[str]:
        return list(self.steps)

    def __call__(self, text: str) -> str:
        for step in self.steps:
            name, _, argument = step.partition(":")
            try:
                text = _APPLY[name](text, argument)
            except ExtractionFailed as exc:
                raise ExtractionFailed(f"extraction {step!r} found nothing: {exc}") from None
        return text


def parse_extraction(steps: str | Sequence[str], where: str = "--extract") -> Extraction:
    """Steps checked now (unknown name, missing argument, a regex that does not compile), so a bad
    one is refused before anything runs."""
    if isinstance(steps, str):
        steps = [steps]
    if not steps:
        raise InputError(f"{where}: give at least one extraction step ({', '.join(STEPS)})")
    for step in steps:
        if not isinstance(step, str):
            raise InputError(f"{where}: an extraction step is text (NAME or NAME:ARGUMENT), not {step!r}")
        name, colon, argument = step.partition(":")
        if name not in STEPS:
            raise InputError(f"{where}: unknown extraction step {name!r} (known: {', '.join(STEPS)})")
        if STEPS[name] and not argument:
            raise InputError(f"{where}: extraction step {name} needs an argument ({name}:...)")
        if name in ("drop_reasoning", "strip") and colon:
            raise InputError(f"{where}: extraction step {name} takes no argument")
        if name == "regex":
            try:
                re.compile(argument)
            except re.error as exc:
                raise InputError(f"{where}: extraction regex {argument!r} does not compile ({exc})") from None
    return Extraction(tuple(steps))


def is_step(text: str) -> bool:
    """Whether ``text`` starts with a step's name (``code``, ``regex:...``), not ``SCORER=STEP``."""
    return text.partition(":")[0] in STEPS


def _code(text: str, language: str) -> str:
    blocks = [(lang.lower(), body) for _, lang, body in _FENCE.findall(text)]
    if not blocks:
        if "```" in text or "~~~" in text:
            raise ExtractionFailed("a code fence is opened but never closed")
        if not text.strip():
            raise ExtractionFailed("the answer is empty")
        return text
    if language:  # a block marked LANG first, else one with no language at all
        blocks = ([b for b in blocks if b[0] == language.lower()] or [b for b in blocks if b[0] == ""])
        if not blocks:
            raise ExtractionFailed(f"no fenced block of {language}")
    return blocks[0][1]


def _regex(text: str, pattern: str) -> str:
    match = re.search(pattern, text)
    if match is None:
        raise ExtractionFailed("no match")
    found = match.group(1) if match.re.groups else match.group(0)
    if found is None:
        raise ExtractionFailed("the group did not take part in the match")
    return found


def _after(text: str, marker: str) -> str:
    if marker not in text:
        raise ExtractionFailed(f"no {marker!r} in the answer")
    found = text.rpartition(marker)[2].strip()
    if not found:
        raise ExtractionFailed(f"nothing after the last {marker!r}")
    return found


def _json(text: str, path: str) -> str:
    try:
        value = json.loads(text)
    except ValueError:
        fenced = [body for _, lang, body in _FENCE.findall(text) if lang.lower() in ("", "json")]
        try:
            value = json.loads(fenced[0]) if fenced else None
        except ValueError:
            value = None
        if value is None:
            raise ExtractionFailed("the answer is not JSON") from None
    for key in path.split("."):
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.lstrip("-").isdigit() and -len(value) <= int(key) < len(value):
            value = value[int(key)]
        else:
            raise ExtractionFailed(f"no {key!r} at {path!r}")
    if value is None:
        raise ExtractionFailed(f"{path!r} is null")
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _drop_reasoning(text: str, _: str) -> str:
    kept = _REASONING.sub("", text)
    if _OPEN_REASONING.search(kept):
        raise ExtractionFailed("a reasoning block never closes")
    if not kept.strip():
        raise ExtractionFailed("the answer is all reasoning")
    return kept.strip()


def _strip(text: str, _: str) -> str:
    return text.strip()


_APPLY: dict[str, Callable[[str, str], str]] = {"code": _code, "regex": _regex, "after": _after, "json": _json,
                                                "drop_reasoning": _drop_reasoning, "strip": _strip}
