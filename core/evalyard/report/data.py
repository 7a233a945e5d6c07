"""Gather one run (and optionally a base run to compare against) into the report's data.

The result has two parts: ``header``/``scorers``/``compare`` are rendered into HTML on the
server side (they are small), and ``table`` is the per-case payload embedded as JSON for the
page's script, laid out column-wise (one array per field) so 10,000 cases x 5 scorers stays
a few megabytes and the browser filters it without building an object per cell.

Run rows are read defensively: fields the core adds over time (fingerprints, corpus-level
aggregates, usage totals) are rendered when present and left out (or shown as unknown) when not.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from . import charts

#: Detail keys whose text is shown as a block of prose or code rather than in the JSON view.
TEXT_DETAIL_KEYS = ("reasoning", "explanation", "rationale", "reason", "message", "output", "traceback", "stderr")


def fingerprint_of(spec: dict[str, Any]) -> str:
    """The scorer's fingerprint as the run stored it, else one derived from what defines it.

    Runs written before fingerprints were stored still get a stable identity to compare:
    the same plugin, version and config hash the same.
    """
    stored = spec.get("fingerprint")
    if stored:
        return str(stored)
    identity = {k: spec.get(k) for k in ("name", "plugin", "version", "config", "judge_model", "prompt_hash")}
    return "~" + hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:12]


def _compact(value: float | None) -> float | None:
    """Six significant digits: what the page shows (three decimals) with room for a tooltip."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return float(f"{value:.6g}")


def _models(run) -> list[str]:
    """Every model a run names: its scorers' judge models (fingerprints, config), the run's judge
    model and generator's model, the models its usage counted calls for."""
    found: list[str] = []
    settings = getattr(run, "settings", None) or {}
    generator = getattr(run, "generator", None) or {}
    candidates = [settings.get("judge_model"), (generator.get("config") or {}).get("model")]
    candidates += list((((run.totals or {}).get("usage") or {}).get("by_model") or {}))
    for value in candidates:
        if isinstance(value, str) and value and value not in found:
            found.append(value)
    for spec in run.scorers or []:
        for value in (spec.get("judge_model"), spec.get("model"), (spec.get("config") or {}).get("model"),
                      (spec.get("config") or {}).get("judge_model"), (spec.get("fingerprint_data") or {}).get("model")):
            if isinstance(value, str) and value and value not in found:
                found.append(value)
    for value in ((run.versions or {}).get("models") or {}):
        if value not in found:
            found.append(str(value))
    return found


def _numbers(usage: dict[str, Any]) -> dict[str, Any]:
    """A usage record in the report's terms. The model layer writes ``prompt_tokens``,
    ``completion_tokens`` and ``cost`` (None when a price is unknown)."""
    return {"calls": usage.get("calls"), "cache_hits": usage.get("cache_hits"),
            "tokens_in": usage.get("prompt_tokens", usage.get("tokens_in")),
            "tokens_out": usage.get("completion_tokens", usage.get("tokens_out")),
            "cost_usd": usage.get("cost", usage.get("cost_usd"))}


def _usage(run, result_usages: list[dict[str, Any]]) -> dict[str, Any]:
    """Run usage: the stored totals when the run has them, else summed from results' usage."""
    stored = (run.totals or {}).get("usage")
    if isinstance(stored, dict):
        return {**_numbers(stored), "known": True}
    if not result_usages:
        return {"calls": 0, "cache_hits": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": None, "known": False}
    total: dict[str, Any] = {"calls": 0, "cache_hits": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0}
    for usage in map(_numbers, result_usages):
        for key in ("calls", "cache_hits", "tokens_in", "tokens_out"):
            total[key] += usage.get(key) or 0
        if total["cost_usd"] is not None:
            cost = usage.get("cost_usd")
            total["cost_usd"] = None if cost is None else total["cost_usd"] + cost  # one unknown: total unknown
    total["known"] = True
    return total


def _header(run, suite, usage: dict[str, Any], case_count: int) -> dict[str, Any]:
    totals = run.totals or {}
    return {
        "id": run.id,
        "name": run.name,
        "status": run.status,
        "suite": suite.name,
        "suite_version": suite.version,
        "suite_description": suite.description,
        "source": run.source,
        "cases": case_count,
        "created_at": run.created_at.isoformat(timespec="seconds") if run.created_at else None,
        "finished_at": run.finished_at.isoformat(timespec="seconds") if run.finished_at else None,
        "duration_s": totals.get("duration_s"),
        "models": _models(run),
        "usage": usage,
        "versions": run.versions or {},
    }


def _scorer_summary(spec: dict[str, Any], stats: dict[str, Any], values: list[float | None],
                    labels: list[str | None]) -> dict[str, Any]:
    label_counts = stats.get("labels") or {}
    if not label_counts:
        counts: dict[str, int] = {}
        for label in labels:
            if label is not None:
                counts[label] = counts.get(label, 0) + 1
        label_counts = counts
    numbers = [v for v in values if v is not None]
    return {
        "name": spec["name"],
        "plugin": spec.get("plugin"),
        "version": spec.get("version"),
        "fingerprint": fingerprint_of(spec),
        "fingerprint_stored": bool(spec.get("fingerprint")),
        "config": spec.get("config") or {},
        "threshold": spec.get("threshold"),
        "higher_is_better": spec.get("higher_is_better", True),
        "judge_model": spec.get("judge_model"),
        "stats": stats,
        "aggregate": stats.get("aggregate") or {},
        "histogram_svg": charts.histogram_svg(numbers, spec.get("threshold")) if numbers else "",
        "labels_svg": charts.label_bars_svg(label_counts) if label_counts else "",
    }


def _summarize_missing(rows: list[Any]) -> dict[str, Any]:
    from ..stats import summarize

    return summarize(rows)


def _result_rows(store, run_id: str):
    """A run's results as plain rows of the columns a report shows.

    A column select, as ``Store.outcomes`` does for summaries: building an ORM object per
    result is most of the cost of a large report (10,000 cases x 5 scorers).
    """
    from sqlalchemy import select

    from ..store.models import ResultRow

    query = (select(ResultRow.case_id, ResultRow.scorer, ResultRow.value, ResultRow.label, ResultRow.passed,
                    ResultRow.details, ResultRow.error, ResultRow.usage)
             .where(ResultRow.run_id == run_id).order_by(ResultRow.id))
    with store.engine.connect() as connection:
        yield from connection.execute(query.execution_options(yield_per=2000))


def gather_run(store, run) -> dict[str, Any]:
    """Everything the report shows about one run (see the module docstring for the layout)."""
    suite = store.suite_of(run)
    cases = store.run_cases(run)
    index = {c.id: i for i, c in enumerate(cases)}
    specs = list(run.scorers or [])
    names = [s["name"] for s in specs]
    n = len(cases)
    columns: dict[str, dict[str, Any]] = {
        name: {"v": [None] * n, "l": [None] * n, "p": [None] * n, "e": {}, "d": {}} for name in names
    }
    label_lists: dict[str, list[str]] = {name: [] for name in names}
    raw_rows: dict[str, list[Any]] = {name: [] for name in names}
    usages: list[dict[str, Any]] = []
    for row in _result_rows(store, run.id):
        column = columns.get(row.scorer)
        i = index.get(row.case_id)
        if column is None or i is None:
            continue
        raw_rows[row.scorer].append(row)
        column["v"][i] = _compact(row.value)
        if row.label is not None:
            known = label_lists[row.scorer]
            if row.label not in known:
                known.append(row.label)
            column["l"][i] = known.index(row.label)
        column["p"][i] = None if row.passed is None else int(bool(row.passed))
        if row.error is not None:
            column["e"][i] = row.error
        if row.details:
            column["d"][i] = row.details
        if row.usage:
            usages.append(row.usage)

    from ..calibration import agreements

    stored_stats = (run.totals or {}).get("scorers") or {}
    agreement = agreements(store, specs)
    scorers = []
    for spec in specs:
        name = spec["name"]
        stats = stored_stats.get(name) or _summarize_missing(raw_rows[name])  # an interrupted run has no totals
        labels = [label_lists[name][k] if k is not None else None for k in columns[name]["l"]]
        scorers.append({**_scorer_summary(spec, stats, columns[name]["v"], labels), "agreement": agreement.get(name),
                        "calibrated_threshold": bool(spec.get("calibration"))})
        columns[name]["labels"] = label_lists[name]
        if not label_lists[name]:
            columns[name]["l"] = None  # an all-null column costs bytes on every case of a large run

    table = {
        "scorers": [{"name": s["name"], "threshold": s["threshold"], "higher_is_better": s["higher_is_better"]}
                    for s in scorers],
        "cases": {
            "id": [c.id for c in cases],
            "input": [c.input for c in cases],
            "candidate": [c.candidate for c in cases],
            "reference": [c.reference for c in cases],
            "context": [c.context or None for c in cases],
            "metadata": [c.metadata or None for c in cases],
        },
        "results": columns,
    }
    return {"header": _header(run, suite, _usage(run, usages), n), "scorers": scorers, "table": table}
