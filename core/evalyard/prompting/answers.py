"""Answer shapes: what a prompt asks the model to answer, and how that answer is read.

- ``binary``: yes or no -> value 1 / 0, label ``yes`` / ``no``;
- ``score``: a number in a declared range -> value normalised to 0..1, the raw number in details;
- ``choice``: one of declared labels -> the label, and a value when a value map is given;
- ``json``: an object fitting a declared schema -> value from a declared field (and a label field);
  without ``value:`` the object is the answer (a list of checklist items, key phrases...);
- ``text``: free text the caller uses as it is (a generated candidate); no verdict.

In text mode the verdict is read from the **last line** of the reply only
(``ANSWER: yes``, or the bare answer), never searched for elsewhere: text the judge
quotes from what it judges cannot pass for its verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..models.structured import parse_json_answer

ANSWER_KINDS = ("binary", "score", "choice", "json", "text")
LOGPROBS_ANSWERS = "logprobs works with binary answers and with choices whose every label has a value"

_ANSWER_LINE = re.compile(r"^(?:final\s+)?(?:answer|verdict)\s*[:=\-]\s*(.*)$", re.IGNORECASE)
_NUMBER = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:\s*/\s*\d+(?:\.\d*)?)?$")
_YES = {"yes", "y", "true"}
_NO = {"no", "n", "false"}


class AnswerError(ValueError):
    """The reply holds no readable answer of the expected shape."""


@dataclass
class Verdict:
    value: float | None
    label: str | None
    raw: Any
    details: dict[str, Any] = field(default_factory=dict)


def final_answer(text: str) -> str:
    """The answer on the reply's last non-empty line (after ``ANSWER:`` if present)."""
    lines = [line for line in (text or "").splitlines() if line.strip()]
    if not lines:
        raise AnswerError("the reply is empty")
    line = lines[-1].strip().strip("*_#>`\"' \t")
    match = _ANSWER_LINE.match(line)
    if match:
        line = match.group(1)
    return line.strip().strip("*_`\"' \t").rstrip(".!").strip()


@dataclass
class AnswerShape:
    kind: str = "binary"
    low: float = 0.0
    high: float = 1.0
    labels: list[str] = field(default_factory=list)
    values: dict[str, float] | None = None
    schema: dict[str, Any] | None = None
    value_field: str | None = None
    label_field: str | None = None
    #: how to answer, in words, for a model that cannot take the schema (else the schema is shown)
    format: str | None = None

    # -- declaring ------------------------------------------------------------
    @classmethod
    def from_spec(cls, spec: Any) -> "AnswerShape":
        """From a front-matter ``answer:`` value; ValueError says what is wrong."""
        if isinstance(spec, str):
            spec = {"type": spec}
        if not isinstance(spec, dict):
            raise ValueError("`answer` must be a kind (binary, score, choice, json, text) or a mapping with `type`")
        kind = spec.get("type")
        if kind not in ANSWER_KINDS:
            raise ValueError(f"answer type must be one of {', '.join(ANSWER_KINDS)}, got {kind!r}")
        known = {"binary": {"type"}, "text": {"type"}, "score": {"type", "range"}, "choice": {"type", "labels", "values"},
                 "json": {"type", "schema", "value", "label", "format"}}[kind]
        unknown = sorted(set(spec) - known)
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r} for a {kind} answer (known: {', '.join(sorted(known))})")
        if kind == "binary":
            return cls(kind="binary", labels=["yes", "no"], values={"yes": 1.0, "no": 0.0})
        if kind == "text":
            return cls(kind="text")
        if kind == "score":
            bounds = spec.get("range")
            if (not isinstance(bounds, list) or len(bounds) != 2
                    or not all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds)
                    or bounds[0] >= bounds[1]):
                raise ValueError("a score answer needs `range: [LOW, HIGH]` with LOW < HIGH")
            return cls(kind="score", low=float(bounds[0]), high=float(bounds[1]))
        if kind == "choice":
            labels = spec.get("labels")
            if not isinstance(labels, list) or len(labels) < 2 or not all(isinstance(x, str) and x for x in labels):
                raise ValueError("a choice answer needs `labels:` with at least two names")
            values = spec.get("values")
            if values is not None:
                if not isinstance(values, dict) or set(values) - set(labels):
                    raise ValueError("`values` must map some of the labels to numbers")
                values = {k: float(v) for k, v in values.items()}
            return cls(kind="choice", labels=list(labels), values=values)
        schema = spec.get("schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise ValueError("a json answer needs `schema:` describing an object")
        value_field = spec.get("value")
        if value_field is not None and (not isinstance(value_field, str)
                                        or value_field.split(".")[0] not in schema.get("properties", {})):
            raise ValueError("`value:` of a json answer must name a property of the schema")
        fmt = spec.get("format")
        if fmt is not None and not isinstance(fmt, str):
            raise ValueError("`format:` of a json answer is text saying how to reply")
        return cls(kind="json", schema=schema, value_field=value_field, label_field=spec.get("label"), format=fmt)

    def to_spec(self) -> dict[str, Any]:
        if self.kind in ("binary", "text"):
            return {"type": self.kind}
        if self.kind == "score":
            return {"type": "score", "range": [self.low, self.high]}
        if self.kind == "choice":
            spec: dict[str, Any] = {"type": "choice", "labels": self.labels}
            if self.values:
                spec["values"] = self.values
            return spec
        spec = {"type": "json", "schema": self.schema}
        for key, value in (("value", self.value_field), ("label", self.label_field), ("format", self.format)):
            if value:
                spec[key] = value
        return spec

    @property
    def gives_value(self) -> bool:
        """Whether an answer of this shape is a scorer's value (a json answer: a number or
        true/false field named by ``value:``)."""
        if self.kind == "text":
            return False
        if self.kind != "json":
            return True
        if not self.value_field:
            return False
        prop: Any = self.schema or {}
        for part in self.value_field.split("."):
            prop = (prop.get("properties") or {}).get(part) if isinstance(prop, dict) else None
        kinds = prop.get("type") if isinstance(prop, dict) else None
        kinds = kinds if isinstance(kinds, list) else [kinds]
        return bool({"number", "integer", "boolean"} & set(kinds))

    @property
    def reads_logprobs(self) -> bool:
        """Whether a value can come from the first answer token's probabilities: P(yes), or the
        expected value of a choice over its labels' probabilities (every label needs a value)."""
        return self.kind == "binary" or (self.kind == "choice" and set(self.values or {}) == set(self.labels))

    # -- asking ------------------------------------------------------------------
    def answer_schema(self, reasoning: bool) -> dict[str, Any]:
        """The JSON schema of a structured answer (reasoning first, so it comes before the verdict)."""
        if self.kind == "json":
            return dict(self.schema or {})
        if self.kind == "binary":
            answer: dict[str, Any] = {"type": "string", "enum": ["yes", "no"]}
        elif self.kind == "score":
            answer = {"type": "number", "minimum": self.low, "maximum": self.high}
        else:
            answer = {"type": "string", "enum": list(self.labels)}
        props: dict[str, Any] = {}
        if reasoning:
            props["reasoning"] = {"type": "string"}
        props["answer"] = answer
        return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}

    def instructions(self, reasoning: bool) -> str:
        """How to answer in text mode (with the static instructions, before the case's data)."""
        if self.kind == "binary":
            options = "`yes` or `no`"
        elif self.kind == "score":
            options = f"a number from {_num(self.low)} to {_num(self.high)}"
        elif self.kind == "choice":
            options = "one of " + ", ".join(f"`{label}`" for label in self.labels)
        elif self.kind == "text":
            return ""
        else:
            raise ValueError("a json answer is asked for with its schema, not in text")
        if reasoning:
            return (f"First explain your judgement in a few sentences. Then finish with a final line of the form "
                    f"`ANSWER: <answer>`, where <answer> is {options}. Nothing may follow that line.")
        return f"Reply with only {options}, and nothing else."

    def reminder(self, reasoning: bool) -> str:
        """One line restating the answer format after the case's data (the full instructions come first)."""
        if self.kind in ("text", "json"):
            return ""
        if self.kind == "binary":
            options = "`yes` or `no`"
        elif self.kind == "score":
            options = f"a number from {_num(self.low)} to {_num(self.high)}"
        else:
            options = "one of " + ", ".join(f"`{label}`" for label in self.labels)
        if reasoning:
            return f"Explain briefly, then end with the line `ANSWER: <answer>` ({options})."
        return f"Reply with only {options}."

    # -- reading -------------------------------------------------------------------
    def read_text(self, text: str) -> Verdict:
        if self.kind == "text":
            return Verdict(None, None, text)
        if self.kind == "json":
            try:
                return self.read_object(parse_json_answer(text, self.schema))
            except ValueError as exc:
                raise AnswerError(str(exc)) from None
        return self._read_answer(final_answer(text))

    def read_object(self, obj: Any) -> Verdict:
        if self.kind != "json":
            if not isinstance(obj, dict) or "answer" not in obj:
                raise AnswerError("the JSON answer has no `answer` field")
            verdict = self._read_answer(obj["answer"])
            if obj.get("reasoning"):
                verdict.details["reasoning"] = obj["reasoning"]
            return verdict
        if not self.gives_value:  # a structured answer for the caller to use (keyphrases, a checklist...)
            return Verdict(None, None, obj)
        value = _dig(obj, self.value_field or "")
        if isinstance(value, bool):
            number: float | None = 1.0 if value else 0.0
        elif isinstance(value, (int, float)):
            number = float(value)
        else:
            raise AnswerError(f"field {self.value_field!r} is not a number or true/false: {value!r}")
        label = _dig(obj, self.label_field) if self.label_field else None
        return Verdict(number, None if label is None else str(label), obj, {"answer": obj})

    def _read_answer(self, answer: Any) -> Verdict:
        text = str(answer).strip()
        folded = text.lower()
        if self.kind == "binary":
            if isinstance(answer, bool):
                folded = "yes" if answer else "no"
            if folded in _YES:
                return Verdict(1.0, "yes", text)
            if folded in _NO:
                return Verdict(0.0, "no", text)
            raise AnswerError(f"expected yes or no as the final answer, got {_short(text)!r}")
        if self.kind == "score":
            if isinstance(answer, (int, float)) and not isinstance(answer, bool):
                number = float(answer)
            elif _NUMBER.match(text):
                number = float(text.split("/")[0])
            else:
                raise AnswerError(f"expected a number from {_num(self.low)} to {_num(self.high)} as the final "
                                  f"answer, got {_short(text)!r}")
            if not self.low <= number <= self.high:
                raise AnswerError(f"score {_num(number)} is outside {_num(self.low)}..{_num(self.high)}")
            normalised = (number - self.low) / (self.high - self.low)
            return Verdict(normalised, None, number, {"raw_score": number, "range": [self.low, self.high]})
        for label in self.labels:
            if label.lower() == folded:
                value = None if self.values is None else self.values.get(label)
                return Verdict(value, label, text)
        raise AnswerError(f"expected one of {', '.join(self.labels)} as the final answer, got {_short(text)!r}")


def _dig(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(obj, dict) or part not in obj:
            raise AnswerError(f"the JSON answer has no field {dotted!r}")
        obj = obj[part]
    return obj


def _num(x: float) -> str:
    return f"{x:g}"


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."
