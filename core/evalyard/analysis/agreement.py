"""Agreement between a scorer and human labels: accuracy, Cohen's kappa, Pearson and
Spearman, a confusion matrix, the best threshold of a numeric scorer against binary
labels, and the cases where they disagree. Pure functions over values; the intervals are
``stats.bootstrap``'s.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

from .stats import bootstrap, wilson_ci

#: Spellings of a positive / negative verdict, so human "1"/"true"/"pass" meets a judge's "yes".
POSITIVE = {"1", "1.0", "yes", "y", "true", "pass", "passed", "correct", "good", "supported", "positive", "faithful",
            "grounded"}
NEGATIVE = {"0", "0.0", "no", "n", "false", "fail", "failed", "incorrect", "bad", "unsupported", "negative",
            "unfaithful", "ungrounded"}
REASON_LIMIT = 300


@dataclass
class Pair:
    """One case: the human label and what the scorer said."""

    case_id: str
    human: Any
    value: float | None = None
    label: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    #: the response and its sources (context and reference), for the no-model baselines
    candidate: str | None = None
    sources: str | None = None
    #: the scorer's own value, which a run's pass/fail applies its threshold to (``value`` above is
    #: what calibration fits on: the same, or a graded value such as a P(yes) kept in details)
    run_value: float | None = None


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


#: Resamples of the agreement intervals (``stats.bootstrap``, the one bootstrap): fewer than a
#: mean's, as each one recomputes kappa or AUC in Python.
BOOTSTRAP_SAMPLES = 1000


def _interval(statistic: Any, n: int) -> list[float] | None:
    return bootstrap(statistic, n)


def share_interval(flags: Sequence[bool]) -> list[float] | None:
    """The 95% interval of a share (accuracy, position consistency): the bootstrap over cases, or,
    when every case has the same outcome (all hits, all misses) and the bootstrap has no spread, the
    Wilson interval, as ``compare`` does (``pairwise.pairwise_stats``): 0 of 8 is not [0, 0]."""
    n = len(flags)
    if n and len(set(flags)) == 1:
        ci = wilson_ci(sum(flags), n)
        return list(ci) if ci else None
    return _interval(lambda rows: sum(flags[i] for i in rows) / len(rows), n)


def figures(truth: Sequence[Any], predicted: Sequence[Any]) -> dict[str, Any]:
    """Accuracy and Cohen's kappa of ``predicted`` against ``truth``, each with its 95% bootstrap interval."""
    n = len(truth)
    hits = [t == p for t, p in zip(truth, predicted)]
    return {"n": n, "accuracy": sum(hits) / n if n else None,
            "accuracy_ci": share_interval(hits),
            "kappa": cohen_kappa(truth, predicted),
            "kappa_ci": _interval(lambda rows: cohen_kappa([truth[i] for i in rows],
                                                           [predicted[i] for i in rows]), n)}


def label_agreement(truth: Sequence[str], predicted: Sequence[str]) -> dict[str, Any]:
    return {**figures(truth, predicted), "confusion": confusion(truth, predicted)}


def _cuts(values: Sequence[float]) -> list[float]:
    """Candidate thresholds: the lowest value (everything on the high side) and the midpoints between
    neighbouring distinct values, so a cut never sits on a value and ``>=`` / ``>`` read the same."""
    distinct = sorted(set(values))
    return [distinct[0]] + [(a + b) / 2 for a, b in zip(distinct, distinct[1:])]


def _predict(values: Sequence[float], threshold: float, direction: str) -> list[bool]:
    return [(v >= threshold) if direction == ">=" else (v < threshold) for v in values]


def best_threshold(values: Sequence[float], positive: Sequence[bool], direction: str | None = None) -> dict[str, Any] | None:
    """The cut that best separates positives: predict positive when value >= t (direction ``>=``) or
    value < t (direction ``<``: the values run against the labels; ``<=``, its name in earlier
    releases, is taken as ``<``); ``direction=None`` tries both.
    Highest accuracy wins; among equals, the highest kappa, then ``>=``, then the lowest t."""
    if not values or len(set(positive)) < 2:
        return None
    best: tuple | None = None
    truth = [str(p) for p in positive]
    if direction == "<=":
        direction = "<"
    for way in ([direction] if direction else [">=", "<"]):
        for t in _cuts(values):
            guesses = _predict(values, t, way)
            accuracy = sum(g == p for g, p in zip(guesses, positive)) / len(values)
            kappa = cohen_kappa(truth, [str(g) for g in guesses])
            key = (accuracy, kappa if kappa is not None else -2.0)
            if best is None or key > best[0]:
                best = (key, t, way, accuracy, kappa)
    _, t, way, accuracy, kappa = best
    return {"threshold": t, "direction": way, "accuracy": accuracy, "kappa": kappa}


def auc(values: Sequence[float], positive: Sequence[bool]) -> float | None:
    """Area under the ROC curve of ``values`` for the positive class (ties count half); None when
    one class is missing. 0.5 is chance, below 0.5 the values run against the labels."""
    pos = [v for v, p in zip(values, positive) if p]
    neg = [v for v, p in zip(values, positive) if not p]
    if not pos or not neg:
        return None
    rank = ranks(list(values))
    pos_rank_sum = sum(r for r, p in zip(rank, positive) if p)
    return (pos_rank_sum - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def auc_interval(values: Sequence[float], positive: Sequence[bool]) -> list[float] | None:
    return _interval(lambda rows: auc([values[i] for i in rows], [positive[i] for i in rows]), len(values))


HELD_OUT_FOLDS = 5


def folds(positive: Sequence[bool], k: int = HELD_OUT_FOLDS) -> list[int] | None:
    """Stratified fold numbers, dealt round-robin within each class in case order (deterministic).
    Fewer folds when a class is small; None when a class has fewer than two cases."""
    counts = Counter(positive)
    k = min(k, min(counts.values())) if len(counts) == 2 else 0
    if k < 2:
        return None
    seen: Counter = Counter()
    out = []
    for p in positive:
        out.append(seen[p] % k)
        seen[p] += 1
    return out


def cross_validated(values: Sequence[float], positive: Sequence[bool], fit: Any = None) -> tuple[int, list[bool]] | None:
    """Each case's guess by a threshold fitted on the other folds (stratified k-fold cross-validation),
    with k; None when a label has fewer than two cases. ``fit(values, positive) -> predict(values) ->
    guesses``; the default fits ``best_threshold``."""
    fit = fit or _fit_threshold
    assigned = folds(positive)
    if assigned is None:
        return None
    k = max(assigned) + 1
    guesses: list[bool] = [False] * len(values)
    for fold in range(k):
        train = [i for i, f in enumerate(assigned) if f != fold]
        test = [i for i, f in enumerate(assigned) if f == fold]
        predict = fit([values[i] for i in train], [positive[i] for i in train])
        for i, guess in zip(test, predict([values[i] for i in test])):
            guesses[i] = guess
    return k, guesses


def held_out(values: Sequence[float], positive: Sequence[bool], fit: Any = None) -> dict[str, Any] | None:
    """Accuracy and kappa (with intervals) of a threshold fitted on the other folds, for each case of
    each fold: what the fitted threshold is worth on cases it was not fitted on."""
    found = cross_validated(values, positive, fit)
    if found is None:
        return None
    k, guesses = found
    # The interval resamples the out-of-fold verdicts with the folds held fixed: it shows how much
    # the estimate moves with the cases drawn, not with the refitting.
    return {"method": f"{k}-fold cross-validation", "folds": k,
            **figures([str(p) for p in positive], [str(g) for g in guesses])}


def _fit_threshold(values: Sequence[float], positive: Sequence[bool]) -> Any:
    best = best_threshold(values, positive)
    if best is None:  # one class only in the training folds: predict it
        only = positive[0] if positive else False
        return lambda vs: [only] * len(vs)
    return lambda vs: _predict(vs, best["threshold"], best["direction"])


def _fit_majority(values: Sequence[float], positive: Sequence[bool]) -> Any:
    counts = Counter(positive)
    majority = counts[True] > counts[False]
    return lambda vs: [majority] * len(vs)


# -- baselines ------------------------------------------------------------------------

_WORD = re.compile(r"\w+")


def words(text: str | None) -> list[str]:
    return _WORD.findall((text or "").lower())


def overlap(candidate: str | None, sources: str | None) -> float:
    """The share of the response's words that occur in the sources (context and reference)."""
    said = words(candidate)
    known = set(words(sources))
    return sum(w in known for w in said) / len(said) if said else 0.0


#: The overlap baseline's name for each format: answers are compared with their context/reference,
#: claims (Trust-Score's format) with the evidence they are checked against.
OVERLAP_NAMES = {"answers": "word overlap with context/reference", "claims": "word overlap of claim with evidence"}


def baselines(pairs: list["Pair"], positive: Sequence[bool], data_format: str = "answers") -> dict[str, dict[str, Any]]:
    """No-model predictors of the same labels on the same cases, each at its best threshold and
    scored held-out like the judge: the majority class, response length (words), and word overlap
    (of the response with its context/reference, or of the claim with its evidence, when cases
    have any). For claims, ``Pair.candidate`` holds the claim and ``Pair.sources`` the evidence."""
    out: dict[str, dict[str, Any]] = {}
    counts = Counter(positive)
    majority_side = counts[True] > counts[False]
    balanced = counts[True] == counts[False]
    out["majority class"] = {"predicts": "either label (balanced)" if balanced else
                             ("positive" if majority_side else "negative"),
                             "accuracy": sum(p == majority_side for p in positive) / len(positive),
                             "held_out": held_out([0.0] * len(positive), positive, fit=_fit_majority)}
    features = {"response length" if data_format == "answers" else "claim length":
                [float(len(words(p.candidate))) for p in pairs]}
    if any(p.sources for p in pairs):
        features[OVERLAP_NAMES[data_format]] = [overlap(p.candidate, p.sources) for p in pairs]
    for name, values in features.items():
        best = best_threshold(values, positive)
        if best is None:
            continue
        out[name] = {**best, "auc": auc(values, positive), "held_out": held_out(values, positive)}
    return out


def best_baseline(found: dict[str, dict[str, Any]] | None) -> dict[str, Any] | None:
    """The baseline with the highest held-out accuracy: ``{name, accuracy, accuracy_ci}``."""
    best = None
    for name, entry in (found or {}).items():
        held = entry.get("held_out") or {}
        if held.get("accuracy") is not None and (best is None or held["accuracy"] > best["accuracy"]):
            best = {"name": name, "accuracy": held["accuracy"], "accuracy_ci": held.get("accuracy_ci")}
    return best


def _accuracy_of(entry: dict[str, Any]) -> float | None:
    held = entry.get("held_out")
    return held["accuracy"] if held else entry.get("accuracy")


def baseline_verdicts(judge_accuracy: float | None, found: dict[str, dict[str, Any]]) -> list[str]:
    """Plain sentences for each baseline that matches or beats the judge (held-out accuracy)."""
    if judge_accuracy is None:
        return []
    out = []
    for name, entry in found.items():
        accuracy = _accuracy_of(entry)
        if accuracy is None:
            continue
        if accuracy > judge_accuracy + 1e-9:
            out.append(f"{name} beats the judge: accuracy {accuracy:.3f} vs {judge_accuracy:.3f}")
        elif accuracy >= judge_accuracy - 1e-9:
            out.append(f"{name} matches the judge: accuracy {accuracy:.3f} vs {judge_accuracy:.3f}")
    return out


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


def positive_label(pairs: list[Pair], positive: str | None, scorer_labels: Sequence[str] = (),
                   higher_is_better: bool = True) -> str | None:
    """The human label that counts as positive (the side a high value speaks for): ``--positive``;
    else, for the usual spellings of a binary verdict, the "yes" one (the "no" one for a scorer whose
    lower values are better: a high hallucination score speaks for "unfaithful"); else, for two
    labels the scorer also gives (a pairwise judge's ``candidate``/``reference``), the one it lists
    first -- its high value's label."""
    if positive is not None:
        return as_text(positive)
    humans = sorted({as_text(p.human) for p in pairs})
    if all(polar(h) for h in humans):
        side = "yes" if higher_is_better else "no"
        said = [h for h in humans if polar(h) == side]
        return said[0] if len(said) == 1 else side
    known = [as_text(label) for label in scorer_labels]
    shared = [h for h in humans if h in known]
    if len(humans) == 2 and shared:
        return min(shared, key=known.index)
    return None


def _positive_side(pairs: list[Pair], positive: str | None) -> list[bool] | None:
    if positive is None:
        return None
    humans = [as_text(p.human) for p in pairs]
    if positive not in humans and positive in ("yes", "no"):
        return [polar(h) == positive for h in humans]
    return [h == positive for h in humans]


def _side_names(pairs: list[Pair], sides: Sequence[bool]) -> tuple[str, str]:
    """The humans' own names of the positive and the negative side (``correct``/``incorrect``), so
    a confusion matrix reads in their words; ``yes``/``no`` where a side goes by several names."""
    positive = {as_text(p.human) for p, side in zip(pairs, sides) if side}
    negative = {as_text(p.human) for p, side in zip(pairs, sides) if not side}
    if len(positive) == 1 and len(negative) == 1:
        return positive.pop(), negative.pop()
    return "yes", "no"


def orders_disagree(winners: Sequence[Any]) -> bool:
    """A pairwise verdict whose two orders named different winners (a tie counts as a winner of its
    own): the one definition of "position-inconsistent" for ``compare --judge`` and ``calibrate``."""
    return len(set(winners)) > 1


def _winners(pair: Pair) -> list[Any] | None:
    winners = pair.details.get("winners") if isinstance(pair.details, dict) else None
    return winners if isinstance(winners, list) and len(winners) == 2 else None


def pairwise_figures(pairs: list[Pair], truth: Sequence[str], predicted: Sequence[str]) -> dict[str, Any]:
    """What a pairwise judge did: how often it picked a side at all, how often its two orders
    agreed, and its accuracy counting a tie or a position-bound split as a miss."""
    n = len(pairs)
    ties = sum(1 for g in predicted if g not in ("candidate", "reference"))
    consistent = [not orders_disagree(_winners(p)) for p in pairs]
    return {"n": n, "decided": n - ties, "ties_or_splits": ties,
            "position_consistency": sum(consistent) / n if n else None,
            "position_consistency_ci": share_interval(consistent),
            **{k: v for k, v in figures(truth, predicted).items() if k != "n"}}


#: What a judge's reply may copy from its prompt without it being reasoning: the data markers and
#: the notice about them, and the answer-format instruction.
_BOILERPLATE = re.compile(r"</?data-[0-9a-f]+>|material to evaluate|inside those markers|are addressed to you|"
                          r"finish with a final line|nothing may follow that line|explain your judgement in a few "
                          r"sentences", re.IGNORECASE)
_ANSWER_LINE = re.compile(r"^\s*\**\s*answer\s*\**\s*:", re.IGNORECASE)


def reasoning_of(details: dict[str, Any]) -> str | None:
    """The judge's own reasoning: the ``reasoning`` it gave, else the text of its reply before the
    final ``ANSWER:`` line, without sentences it copied from the prompt. None when there is none
    (a bare verdict, a P(yes) read from one token)."""
    text = details.get("reasoning")
    if not (isinstance(text, str) and text.strip()):
        raw = details.get("raw")
        if not isinstance(raw, str):
            return None
        lines = raw.strip().splitlines()
        while lines and (not lines[-1].strip() or _ANSWER_LINE.match(lines[-1])):
            lines.pop()
        sentences = re.split(r"(?<=[.!?])\s+|\n+", "\n".join(lines))
        text = " ".join(s for s in sentences if s.strip() and not _BOILERPLATE.search(s))
        if len(words(text)) < 2:  # a copied verdict word is not reasoning
            return None
    text = " ".join(text.split())
    return text if len(text) <= REASON_LIMIT else text[:REASON_LIMIT - 3] + "..."


def _scorer_cut(pairs: list[Pair], threshold: float, higher_is_better: bool) -> tuple[list[bool], str]:
    """Positive guesses of the scorer at its own threshold, applied to the value a run applies it to
    (the scorer's value, not a graded calibration value). A value says "positive" when it is high
    (value 1 = yes), whatever the data show: a scorer that passes when its value is at least the
    threshold calls those positive; one that passes at most the threshold (lower is better) calls
    the values above it positive."""
    values = [p.value if p.run_value is None else p.run_value for p in pairs]
    if higher_is_better:
        return [v >= threshold for v in values], f"value >= {threshold:g}"
    return [v > threshold for v in values], f"value > {threshold:g}"


def _rule(threshold: float, direction: str) -> str:
    return f"value {'>=' if direction == '>=' else '<'} {threshold:.4g}"


def agreement_report(pairs: list[Pair], *, higher_is_better: bool = True, scorer_threshold: float | None = None,
                     positive: str | None = None, with_baselines: bool = True, scorer_labels: Sequence[str] = (),
                     data_format: str = "answers") -> dict[str, Any]:
    """Everything ``evalyard calibrate`` prints, for the pairs that have both a human label and a verdict.

    ``at_threshold`` is the agreement a run of the scorer gets as it is (its labels, or its value at
    its own threshold: nothing fitted); ``threshold.held_out`` what the fitted threshold gets on
    cases it was not fitted on (what ``--calibrated`` gets). Both carry 95% bootstrap intervals."""
    report: dict[str, Any] = {"compared": len(pairs), "human_kind": human_kind([p.human for p in pairs]) if pairs
                              else None, "balance": None, "labels": None, "correlation": None, "auc": None,
                              "auc_ci": None, "threshold": None, "at_threshold": None, "positive_label": None,
                              "pairwise": None, "baselines": None, "best_baseline": None, "baseline_verdicts": [],
                              "disagreements": [], "notes": [], "points": None}
    if not pairs:
        return report
    report["balance"] = dict(sorted(Counter(as_text(p.human) for p in pairs).items()))
    kind = report["human_kind"]
    # correlate with the labels as numbers only when every label is one (else: positive = 1 below)
    numeric = [p for p in pairs if p.value is not None] if all(as_number(p.human) is not None for p in pairs) else []
    if numeric:
        xs = [p.value for p in numeric]
        ys = [as_number(p.human) for p in numeric]
        report["correlation"] = {"n": len(numeric), "pearson": pearson(xs, ys), "spearman": spearman(xs, ys)}
    predicted: list[str] | None = None
    truth: list[str] | None = None
    compared = pairs
    labelled = [p for p in pairs if p.label is not None]
    pairwise = bool(pairs) and all(_winners(p) for p in pairs)
    if pairwise and len(labelled) == len(pairs):  # one vocabulary (candidate, reference, ...) even with no side picked
        common = ([as_text(p.human) for p in pairs], [as_text(p.label) for p in pairs])
    else:
        common = _common_labels(labelled) if labelled and kind != "numeric" else None
    if common is not None:
        truth, predicted = common
        compared = labelled
        report["labels"] = {"basis": "labels", **label_agreement(truth, predicted)}
        report["at_threshold"] = {"rule": "its labels", **report["labels"]}
        report["at_threshold"].pop("confusion")
        if pairwise:
            report["pairwise"] = pairwise_figures(labelled, truth, predicted)
    if kind == "binary":
        valued = [p for p in pairs if p.value is not None]
        report["positive_label"] = positive_label(valued, positive, scorer_labels, higher_is_better)
        sides = _positive_side(valued, report["positive_label"])
        if valued and sides is None:
            report["notes"].append("no threshold, AUC or baselines: name the human label that counts as positive "
                                   "with --positive")
        if valued and sides is not None:
            xs, ys = [p.value for p in valued], [float(s) for s in sides]
            if report["correlation"] is None:  # labels that are not numbers: correlate with positive = 1
                report["correlation"] = {"n": len(valued), "pearson": pearson(xs, ys), "spearman": spearman(xs, ys)}
            if not pairwise:  # each case's own value and side: a run's figure at any threshold
                report["points"] = {"value": [p.value if p.run_value is None else p.run_value for p in valued],
                                    "positive": list(sides)}
            if len(set(xs)) > 2:  # a probability or a graded score, not a bare 0/1 verdict
                report["auc"] = auc(xs, sides)
                report["auc_ci"] = auc_interval(xs, sides)
            best = best_threshold(xs, sides)
            # a pairwise judge's own cut (value >= 0.5) would count its ties as picking the candidate
            at_scorer = _scorer_cut(valued, scorer_threshold, higher_is_better) \
                if scorer_threshold is not None and not pairwise else None
            if best is not None:
                best["held_out"] = held_out(xs, sides)
                if at_scorer is not None:
                    guesses = at_scorer[0]
                    best["scorer_threshold"] = scorer_threshold
                    best["accuracy_at_scorer_threshold"] = sum(g == s for g, s in zip(guesses, sides)) / len(valued)
                    best["kappa_at_scorer_threshold"] = cohen_kappa([str(s) for s in sides], [str(g) for g in guesses])
                report["threshold"] = best
            if common is None:  # no labels to compare: the scorer's own cut, else the fitted one held out
                guesses, basis = None, None
                if at_scorer is not None:
                    guesses, basis = at_scorer
                elif best is not None and best["held_out"] is not None:
                    guesses = cross_validated(xs, sides)[1]
                    basis = (f"{_rule(best['threshold'], best['direction'])}, {best['held_out']['method']} (the "
                             f"scorer has no threshold of its own)")
                if guesses is not None:
                    yes, no = _side_names(valued, sides)
                    truth = [yes if s else no for s in sides]
                    predicted = [yes if g else no for g in guesses]
                    compared = valued
                    report["labels"] = {"basis": basis, **label_agreement(truth, predicted)}
                    if at_scorer is not None:
                        report["at_threshold"] = {"rule": basis, **report["labels"]}
                        report["at_threshold"].pop("confusion")
            if with_baselines and len(set(sides)) == 2:
                report["baselines"] = baselines(valued, sides, data_format)
                report["best_baseline"] = best_baseline(report["baselines"])
    report["judge_figure"] = _judge_figure(report)
    judge_accuracy = report["judge_accuracy"] = (report["judge_figure"] or {}).get("accuracy")
    if report["baselines"]:
        report["baseline_verdicts"] = baseline_verdicts(judge_accuracy, report["baselines"])
    if predicted is not None and truth is not None:
        for p, t, guess in zip(compared, truth, predicted):
            if t != guess:
                report["disagreements"].append({"id": p.case_id, "human": p.human, "scorer": guess, "label": p.label,
                                                "value": p.value, "reasoning": reasoning_of(p.details)})
    return report


def _judge_figure(report: dict[str, Any]) -> dict[str, Any] | None:
    """The judge's figure in the baseline table, measured as the baselines are: held out. With a
    fitted threshold, that threshold on the folds it was not fitted on; without one (a judge
    compared by its labels, nothing fitted), its figure as it stands, which nothing was fitted to.
    Never the higher of two kinds of figure: the warnings compare it with held-out baselines."""
    held = (report["threshold"] or {}).get("held_out")
    if held and held.get("accuracy") is not None:
        return {"basis": f"fitted threshold, {held['method']}", **held}
    at = report["at_threshold"]
    if at and at.get("accuracy") is not None:
        return {"basis": f"{at['rule']} (nothing fitted)", **at}
    return None
