"""The checklist formulas (AutoChecklist's, kept exactly) and the corpus-level metrics."""

from __future__ import annotations

from typing import Any

from .data import UNGROUPED

PRIMARY_METRICS = ("pass", "weighted", "normalized")


def item_aggregates(items: list[dict[str, Any]], primary_metric: str) -> dict[str, Any]:
    """pass_rate, weighted_score, normalized_score, primary_score, scaled_score_1_5 over answered items.

    ``items``: dicts with ``answer`` (yes/no), ``weight`` and ``confidence`` (or None).
    pass_rate = #yes / #items (0.0 when empty); weighted = sum w·[yes] / sum w (0.0 when sum w = 0);
    normalized = mean confidence over the items that have one, pass_rate when none has;
    scaled_score_1_5 = pass_rate·4 + 1.
    """
    count = len(items)
    yes = sum(1 for i in items if i["answer"] == "yes")
    pass_rate = yes / count if count else 0.0
    total_weight = sum(i["weight"] for i in items)
    weighted = (sum(i["weight"] for i in items if i["answer"] == "yes") / total_weight) if total_weight else 0.0
    confidences = [i["confidence"] for i in items if i.get("confidence") is not None]
    normalized = sum(confidences) / len(confidences) if confidences else pass_rate
    primary = {"pass": pass_rate, "weighted": weighted, "normalized": normalized}[primary_metric]
    return {"pass_rate": pass_rate, "weighted_score": weighted, "normalized_score": normalized,
            "primary_metric": primary_metric, "primary_score": primary, "scaled_score_1_5": pass_rate * 4 + 1}


def category_scores(items: list[dict[str, Any]], primary_metric: str) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        groups.setdefault(item.get("category") or UNGROUPED, []).append(item)
    return {name: {**item_aggregates(group, primary_metric), "items": len(group)} for name, group in groups.items()}


def corpus_metrics(scores: list[Any]) -> dict[str, float]:
    """Over a run's scored cases (errors left out, counted in ``error_cases``):

    - ``micro_pass_rate`` (TICK's DRFR): YES answers over all items of all cases, pooled;
    - ``macro_pass_rate``: mean of the cases' pass rates;
    - ``mean_primary_score``, ``mean_weighted_score``, ``mean_normalized_score``;
    - ``category.NAME.pass_rate``: pooled pass rate of the items in that category.
    """
    yes = total = 0
    pass_rates, primaries, weighted, normalized = [], [], [], []
    by_category: dict[str, list[int]] = {}
    errors = 0
    for score in scores:
        details = score.details or {}
        if score.error is not None or "items" not in details:
            errors += 1
            continue
        for item in details["items"]:
            if item.get("answer") not in ("yes", "no"):
                continue
            total += 1
            hit = item["answer"] == "yes"
            yes += hit
            counts = by_category.setdefault(item.get("category") or UNGROUPED, [0, 0])
            counts[0] += hit
            counts[1] += 1
        pass_rates.append(details["pass_rate"])
        primaries.append(details["primary_score"])
        weighted.append(details["weighted_score"])
        normalized.append(details["normalized_score"])
    out: dict[str, float] = {"error_cases": float(errors), "items": float(total)}
    if not pass_rates:
        return out
    out.update({
        "micro_pass_rate": yes / total if total else 0.0,
        "drfr": yes / total if total else 0.0,
        "macro_pass_rate": sum(pass_rates) / len(pass_rates),
        "mean_primary_score": sum(primaries) / len(primaries),
        "mean_weighted_score": sum(weighted) / len(weighted),
        "mean_normalized_score": sum(normalized) / len(normalized),
    })
    if len(by_category) > 1 or UNGROUPED not in by_category:
        for name, (hits, count) in sorted(by_category.items()):
            out[f"category.{name}.pass_rate"] = hits / count
    return out
