"""Agreement between a scorer and human labels: accuracy, Cohen's kappa, Pearson and
Spearman, a confusion matrix, the best threshold of a numeric scorer against binary
labels, and the cases where they disagree. Pure functions, no imports beyond the standard
library, so ``evalyard calibrate`` starts fast.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

#: Spellings of a positive / negative verdict, so human "1"/"true"/"pass" meets a judge's "yes".
POSITIVE = {"1", "1.0", "yes", "y", "true", "pass", "passed", "correct", "good", "supported", "positive"}
NEGATIVE = {"0", "0.0", "no", "n", "false", "fail", "failed", "incorrect", "bad", "unsupported", "negative"}
REASON_LIMIT = 300


@dataclass
class Pair:
    """One case: the human label and what the scorer said."""

    case_id: str
    human: Any
    value: float | None = None
    label: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


def as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip().lower()


def polar(text: str) -> str | None:
    """``yes`` / ``no`` for the usual spellings of a binary verdict, else None."""
    if text in POSITIVE:
        return "yes"
    if text in NEGATIVE:
        return "no"
    return None


def as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            side = polar(as_text(value))
            return None if side is None else float(side == "yes")
        return number if math.isfinite(number) else None
    return None


# -- statistics ---------------------------------------------------------------------

def cohen_kappa(truth: Sequence[str], predicted: Sequence[str]) -> float | None:
    """(p_o - p_e) / (1 - p_e); None when undefined (both sides use one and the same label)."""
    n = len(truth)
    if n == 0:
        return None
    observed = sum(t == p for t, p in zip(truth, predicted)) / n
    t_counts, p_counts = Counter(truth), Counter(predicted)
    expected = sum(t_counts[k] * p_counts[k] for k in t_counts) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1 - expected)


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties given their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    start = 0
    while start < len(order):
        stop = start
        while stop + 1 < len(order) and values[order[stop + 1]] == values[order[start]]:
            stop += 1
        for k in range(start, stop + 1):
            out[order[k]] = (start + stop) / 2 + 1
        start = stop + 1
    return out


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    return pearson(ranks(xs), ranks(ys))


def confusion(truth: Sequence[str], predicted: Sequence[str]) -> dict[str, Any]:
    labels = sorted(set(truth) | set(predicted))
    counts = Counter(zip(truth, predicted))
    return {"labels": labels, "matrix": [[counts[(t, p)] for p in labels] for t in labels]}


def label_agreement(truth: Sequence[str], predicted: Sequence[str]) -> dict[str, Any]:
    n = len(truth)
    return {"n": n, "accuracy": sum(t == p for t, p in zip(truth, predicted)) / n if n else None,
            "kappa": cohen_kappa(truth, predicted), "confusion": confusion(truth, predicted)}


def best_threshold(values: Sequence[float], positive: Sequence[bool], direction: str) -> dict[str, Any] | None:
    """The cut that best separates positives: predict positive when value >= t (or <= t).
    Highest accuracy wins; among equals, the highest kappa, then the lowest t (>=) / highest t (<=)."""
    if not values or len(set(positive)) < 2:
        return None
    best: tuple | None = None
    for t in sorted(set(values), reverse=direction == "<="):
        guesses = [(v >= t) if direction == ">=" else (v <= t) for v in values]
        accuracy = sum(g == p for g, p in zip(guesses, positive)) / len(values)
        kappa = cohen_kappa([str(p) for p in positive], [str(g) for g in guesses])
        key = (accuracy, kappa if kappa is not None else -2.0)
        if best is None or key > best[0]:
            best = (key, t, accuracy, kappa)
    _, t, accuracy, kappa = best
    return {"threshold": t, "direction": direction, "accuracy": accuracy, "kappa": kappa}


# -- the whole report -------------------------------------------------------------

def human_kind(values: Sequence[Any]) -> str:
    texts = {as_text(v) for v in values}
    numbers = [as_number(v) for v in values]
    if len(texts) <= 2:
        return "binary"
    if all(n is not None for n in numbers) and not all(polar(t) for t in texts):
        return "numeric"
    return "categorical"


def _common_labels(pairs: list[Pair]) -> tuple[list[str], list[str]] | None:
    """Human and scorer labels in one vocabulary: as written when the two sets share a label,
    else both mapped to yes/no when both are binary verdicts; None when they cannot meet."""
    humans = [as_text(p.human) for p in pairs]
    scored = [as_text(p.label) for p in pairs]
    if set(humans) & set(scored):
        return humans, scored
    mapped_h, mapped_s = [polar(h) for h in humans], [polar(s) for s in scored]
    if all(mapped_h) and all(mapped_s):
        return mapped_h, mapped_s
    return None


def _positive_side(pairs: list[Pair], positive: str | None) -> list[bool] | None:
    humans = [as_text(p.human) for p in pairs]
    if positive is not None:
        return [h == as_text(positive) for h in humans]
    sides = [polar(h) for h in humans]
    if all(sides):
        return [s == "yes" for s in sides]
    return None


def _reason(details: dict[str, Any]) -> str | None:
    for key in ("reasoning", "raw"):
        text = details.get(key)
        if isinstance(text, str) and text.strip():
            text = " ".join(text.split())
            return text if len(text) <= REASON_LIMIT else text[:REASON_LIMIT - 3] + "..."
    return None


def _scorer_cut(pairs: list[Pair], threshold: float, higher_is_better: bool,
                direction: str) -> tuple[list[bool], str]:
    """Positive guesses at the scorer's own threshold, with its own pass rule (value >= t when higher is
    better, value <= t when lower is): positive = pass when the values run in the pass direction."""
    passes = [(p.value >= threshold) if higher_is_better else (p.value <= threshold) for p in pairs]
    aligned = (direction == ">=") == higher_is_better
    guesses = passes if aligned else [not g for g in passes]
    operator = (">=" if higher_is_better else "<=") if aligned else ("<" if higher_is_better else ">")
    return guesses, f"value {operator} {threshold:g}"


def agreement_report(pairs: list[Pair], *, higher_is_better: bool = True, scorer_threshold: float | None = None,
                     positive: str | None = None) -> dict[str, Any]:
    """Everything ``evalyard calibrate`` prints, for the pairs that have both a human label and a verdict."""
    report: dict[str, Any] = {"compared": len(pairs), "human_kind": human_kind([p.human for p in pairs]) if pairs
                              else None, "labels": None, "correlation": None, "threshold": None, "disagreements": []}
    if not pairs:
        return report
    kind = report["human_kind"]
    numeric = [p for p in pairs if p.value is not None and as_number(p.human) is not None]
    if numeric:
        xs = [p.value for p in numeric]
        ys = [as_number(p.human) for p in numeric]
        report["correlation"] = {"n": len(numeric), "pearson": pearson(xs, ys), "spearman": spearman(xs, ys)}
    predicted: list[str] | None = None
    truth: list[str] | None = None
    compared = pairs
    labelled = [p for p in pairs if p.label is not None]
    common = _common_labels(labelled) if labelled and kind != "numeric" else None
    if common is not None:
        truth, predicted = common
        compared = labelled
        report["labels"] = {"basis": "labels", **label_agreement(truth, predicted)}
    if kind == "binary":
        valued = [p for p in pairs if p.value is not None]
        sides = _positive_side(valued, positive)
        if valued and sides is not None:
            xs, ys = [p.value for p in valued], [float(s) for s in sides]
            corr = pearson(xs, ys)
            if report["correlation"] is None:  # labels that are not numbers: correlate with positive = 1
                report["correlation"] = {"n": len(valued), "pearson": corr, "spearman": spearman(xs, ys)}
            direction = "<=" if (corr is not None and corr < 0) or (corr is None and not higher_is_better) else ">="
            best = best_threshold([p.value for p in valued], sides, direction)
            at_scorer = None
            if scorer_threshold is not None:
                at_scorer = _scorer_cut(valued, scorer_threshold, higher_is_better, direction)
            if best is not None:
                if at_scorer is not None:
                    best["scorer_threshold"] = scorer_threshold
                    best["accuracy_at_scorer_threshold"] = sum(
                        g == s for g, s in zip(at_scorer[0], sides)) / len(valued)
                report["threshold"] = best
            if common is None:  # no labels to compare: cut at the scorer's own threshold, else at the best one
                if at_scorer is not None:
                    guesses, basis = at_scorer
                elif best is not None:
                    cut = best["threshold"]
                    guesses = [(p.value >= cut) if direction == ">=" else (p.value <= cut) for p in valued]
                    basis = f"value {direction} {cut:g}"
                else:
                    guesses = None
                if guesses is not None:
                    truth = ["yes" if s else "no" for s in sides]
                    predicted = ["yes" if g else "no" for g in guesses]
                    compared = valued
                    report["labels"] = {"basis": basis, **label_agreement(truth, predicted)}
    if predicted is not None and truth is not None:
        for p, t, guess in zip(compared, truth, predicted):
            if t != guess:
                report["disagreements"].append({"id": p.case_id, "human": p.human, "scorer": guess, "label": p.label,
                                                "value": p.value, "reasoning": _reason(p.details)})
    return report
