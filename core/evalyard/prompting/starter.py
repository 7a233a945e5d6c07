"""``prompts new NAME --answer KIND``: a starting template that works as a scorer as written."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from .answers import ANSWER_KINDS
from .library import SUFFIX
from .template import parse_template

_ANSWERS = {
    "binary": "answer: binary",
    "score": "answer:\n  type: score\n  range: [1, 5]",
    "choice": ("answer:\n  type: choice\n  labels: [good, partial, poor]\n"
               "  values: {good: 1.0, partial: 0.5, poor: 0.0}"),
    "json": ("answer:\n  type: json\n  value: score\n  label: verdict\n  schema:\n    type: object\n"
             "    properties:\n      reasoning: {type: string}\n      verdict: {type: string, enum: [pass, fail]}\n"
             "      score: {type: number, minimum: 0, maximum: 1}\n    required: [reasoning, verdict, score]"),
}

_QUESTIONS = {
    "binary": "Does the response answer the question fully and correctly?",
    "score": "How well does the response answer the question, from 1 (not at all) to 5 (fully and correctly)?",
    "choice": "Is the response good, partial or poor as an answer to the question?",
    "json": ("Judge the response as an answer to the question. Give your reasoning, a verdict (pass or fail) "
             "and a score from 0 to 1."),
}


def starter_text(name: str, answer: str) -> str:
    kinds = [kind for kind in ANSWER_KINDS if kind in _ANSWERS]
    if answer not in kinds:
        raise InputError(f"--answer must be one of {', '.join(kinds)}, got {answer!r}")
    return (
        "---\n"
        f"description: {_QUESTIONS[answer].split('?')[0].split('.')[0]} (edit me)\n"
        "fields: [input, candidate]\n"
        f"{_ANSWERS[answer]}\n"
        "system: You are a careful evaluator of answers written by an AI assistant.\n"
        "scorer: true\n"
        "---\n"
        "{# Case fields printed with {{ ... }} are wrapped in data markers automatically;\n"
        "   the answer format is added after this text. #}\n"
        "Here is a question and the response to evaluate.\n\n"
        "Question:\n{{ input }}\n\n"
        "Response:\n{{ candidate }}\n\n"
        f"{_QUESTIONS[answer]}\n"
    )


def write_starter(name: str, answer: str, directory: str | Path = ".", *, overwrite: bool = False) -> Path:
    """Write ``DIR/NAME.jinja``; refuses to replace an existing file unless asked."""
    if not name or name.startswith("/") or ".." in Path(name).parts:
        raise InputError(f"not a template name: {name!r}")
    path = Path(directory) / f"{name}{SUFFIX}"
    if path.exists() and not overwrite:
        raise InputError("a template already exists here", path=str(path))
    text = starter_text(name, answer)
    parse_template(text, name=name, path=str(path))  # what we write must load
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
