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
import re
from typing import Any

from . import charts, media_view

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
    from ..analysis.stats import summarize

    return summarize(rows)


def _columns(case_ids: list[str], names: list[str], rows) -> tuple[dict[str, dict[str, Any]], dict[str, list[Any]], list[dict[str, Any]]]:
    """Results laid out column-wise along ``case_ids`` (see the module docstring), the raw rows
    per scorer, and the results' usage records."""
    index = {case_id: i for i, case_id in enumerate(case_ids)}
    n = len(case_ids)
    columns: dict[str, dict[str, Any]] = {
        name: {"v": [None] * n, "l": [None] * n, "p": [None] * n, "e": {}, "d": {}, "labels": []} for name in names
    }
    raw_rows: dict[str, list[Any]] = {name: [] for name in names}
    usages: list[dict[str, Any]] = []
    for row in rows:
        column = columns.get(row.scorer)
        i = index.get(row.case_id)
        if column is None or i is None:
            continue
        raw_rows[row.scorer].append(row)
        column["v"][i] = _compact(row.value)
        if row.label is not None:
            known = column["labels"]
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
    for column in columns.values():
        if not column["labels"]:
            column["l"] = None  # an all-null column costs bytes on every case of a large run
    return columns, raw_rows, usages


def ranking_view(retrieved: list[dict[str, Any]] | None, relevant: dict[str, int] | None) -> list[dict[str, Any]] | None:
    """A case's ranked passages as the case view shows them: in the ranking's order (trec_eval's,
    ``retrieval.ranked_passages``: the page's script never reorders them), each with its rank and,
    when judged, its grade (1 or more: relevant)."""
    if retrieved is None:
        return None
    from ..retrieval import ranked_passages

    grades = relevant or {}
    view = []
    for rank, passage in enumerate(ranked_passages(retrieved), start=1):
        row = {"rank": rank, "id": passage["id"]}
        for key in ("score", "text"):
            if passage.get(key) is not None:
                row[key] = passage[key]
        if passage["id"] in grades:
            row["grade"] = grades[passage["id"]]
        view.append(row)
    return view


#: A scorer named NAME@K measures NAME at cutoff K (``recall@10``).
AT_K = re.compile(r"^(?P<measure>.+)@(?P<k>[0-9]+)$")


def at_k_measures(names: list[str]) -> dict[str, list[tuple[int, str]]]:
    """The measures scored at several cutoffs: ``{measure: [(k, scorer name), ...]}``, k ascending,
    in the order the measures first appear (a measure at one cutoff has no curve to draw)."""
    found: dict[str, dict[int, str]] = {}
    for name in names:
        match = AT_K.match(name)
        if match:
            found.setdefault(match["measure"], {}).setdefault(int(match["k"]), name)
    return {measure: sorted(ks.items()) for measure, ks in found.items() if len(ks) > 1}


def retrieval_at_k(scorers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run page's "retrieval at k": each measure's mean and 95% interval against k, charted."""
    stats = {s["name"]: s.get("stats") or {} for s in scorers}
    out = []
    for measure, ks in at_k_measures([s["name"] for s in scorers]).items():
        points = [{"k": k, "scorer": name, "mean": stats[name].get("mean"), "ci95": stats[name].get("ci95")}
                  for k, name in ks]
        out.append({"measure": measure, "points": points,
                    "svg": charts.at_k_svg(measure, [{"label": measure, "points": points}])})
    return out


def _table(scorers: list[dict[str, Any]], cases: list[Any], columns: dict[str, Any]) -> dict[str, Any]:
    """The page's JSON payload: scorers, case fields as columns, results as columns."""
    fields = {
        "id": [c.id for c in cases],
        "input": [c.input for c in cases],
        "candidate": [c.candidate for c in cases],
        "reference": [c.reference for c in cases],
        "context": [c.context or None for c in cases],
        "metadata": [c.metadata or None for c in cases],
    }
    if any(c.messages for c in cases):  # a conversation's turns, only in runs that have them
        fields["messages"] = [c.messages or None for c in cases]
    if any(c.retrieved is not None or c.relevant for c in cases):  # a retrieval, only in runs that have one
        fields["retrieved"] = [ranking_view(c.retrieved, c.relevant) for c in cases]
        fields["relevant"] = [c.relevant or None for c in cases]
    if any(c.reference_contexts for c in cases):
        fields["reference_contexts"] = [c.reference_contexts or None for c in cases]
    if any(c.input_parts for c in cases):  # an input with images or audio, only in runs that have one
        fields["input_parts"] = [c.input_parts or None for c in cases]
    return {"scorers": [{"name": s["name"], "threshold": s["threshold"], "higher_is_better": s["higher_is_better"]}
                        for s in scorers],
            "cases": fields, "results": columns}


def gather_run(store, run) -> dict[str, Any]:
    """Everything the report shows about one run (see the module docstring for the layout)."""
    suite = store.suite_of(run)
    cases = store.run_cases(run)
    specs = list(run.scorers or [])
    names = [s["name"] for s in specs]
    from ..store.queries import report_rows

    columns, raw_rows, usages = _columns([c.id for c in cases], names, report_rows(store, run.id))

    from ..figures.calibrations import agreements

    stored_stats = (run.totals or {}).get("scorers") or {}
    agreement = agreements(store, specs)
    scorers = []
    for spec in specs:
        name = spec["name"]
        stats = stored_stats.get(name) or _summarize_missing(raw_rows[name])  # an interrupted run has no totals
        column = columns[name]
        labels = [column["labels"][k] if k is not None else None for k in column["l"] or [None] * len(cases)]
        scorers.append({**_scorer_summary(spec, stats, column["v"], labels), "agreement": agreement.get(name),
                        "calibrated_threshold": bool(spec.get("calibration"))})
    return {"header": _header(run, suite, _usage(run, usages), len(cases)), "scorers": scorers,
            "at_k": retrieval_at_k(scorers), "table": _with_epochs(store, run, _table(scorers, cases, columns)),
            "media": media_view.records(cases)}


def _with_epochs(store, run, table: dict[str, Any]) -> dict[str, Any]:
    """The table with the epochs of a bounded set of its cases (``epochs.case_epochs``) for the
    case detail, when the run has ``--epochs``."""
    from .epochs import EPOCH_CASES, case_epochs, epochs_of

    if epochs_of(run) > 1:
        shown = case_epochs(store, run, table["cases"]["id"])
        table["epochs"] = {"n": epochs_of(run), "limit": EPOCH_CASES, "cases": shown}
    return table


# -- large runs -------------------------------------------------------------------------------------

#: Runs of up to this many cases get every case in the page's table (10,000 cases x 5 scorers
#: is about 4 MB packed and filters in the browser within a second: benchmarks/RESULTS.md,
#: "Report"); larger runs get the bounded page of ``gather_large_run``.
FULL_TABLE_MAX_CASES = 10_000
#: The bounded page: this many worst and failing cases per scorer, and a sample of the suite.
TOP_CASES = 50
SAMPLE_CASES = 200


def is_large(store, run, limit: int | None = None) -> bool:
    return store.suite_of(run).case_count > (FULL_TABLE_MAX_CASES if limit is None else limit)


def _cases_of(store, run, case_ids: list[str]) -> list[Any]:
    from ..scoring import Case
    from ..store.reading import cases_by_id

    found = cases_by_id(store, run, case_ids)
    ordered = sorted((c for c in case_ids if c in found), key=lambda c: found[c]["position"])
    return [Case(id=c, input=found[c]["input"], candidate=found[c]["candidate"], reference=found[c]["reference"],
                 context=found[c]["context"], metadata=found[c]["metadata"], **found[c]["dialogue"]) for c in ordered]


def gather_large_run(store, run, *, case_ids: list[str] | None = None, extra_ids: list[str] = (),
                     histograms: bool = True) -> dict[str, Any]:
    """A run too large for a full table, in memory bounded whatever its size: statistics as
    stored (or from SQL aggregates), histograms binned in SQL, and the table of a bounded set
    of cases -- ``case_ids`` when given (a dashboard page), else the ``TOP_CASES`` worst and
    failing cases per scorer and ``SAMPLE_CASES`` cases at even steps through the suite."""
    from ..figures.calibrations import agreements
    from ..store import reading

    suite = store.suite_of(run)
    specs = list(run.scorers or [])
    names = [s["name"] for s in specs]
    stats, _ = reading.run_statistics(store, run)
    worst: dict[str, list[str]] = {}
    failing: dict[str, list[str]] = {}
    sample: list[str] = []
    if case_ids is None:
        for spec in specs:
            worst[spec["name"]] = reading.worst_case_ids(store, run.id, spec["name"], limit=TOP_CASES,
                                                         higher_is_better=spec.get("higher_is_better", True))
            failing[spec["name"]] = reading.failing_case_ids(store, run, spec["name"], limit=TOP_CASES)
        sample = reading.sample_case_ids(store, run, suite.case_count, size=SAMPLE_CASES)
        chosen = list(dict.fromkeys([*extra_ids, *sample, *(c for ids in worst.values() for c in ids),
                                     *(c for ids in failing.values() for c in ids)]))
    else:
        chosen = list(dict.fromkeys([*case_ids, *extra_ids]))
    cases = _cases_of(store, run, chosen) if case_ids is None else _cases_in_order(store, run, chosen)
    columns, _, _ = _columns([c.id for c in cases], names, reading.results_of_cases(store, run.id, [c.id for c in cases]))
    agreement = agreements(store, specs)
    scorers = []
    for spec in specs:
        name, st = spec["name"], stats[spec["name"]]
        summary = _scorer_summary(spec, st, [], [])
        if histograms and st.get("min") is not None:
            low, high = charts.histogram_range(st["min"], st["max"], spec.get("threshold"))
            counts = reading.histogram(store, run.id, name, low, high, charts.BINS)
            summary["histogram_svg"] = charts.histogram_counts_svg(counts, low, high, spec.get("threshold"))
        scorers.append({**summary, "agreement": agreement.get(name), "calibrated_threshold": bool(spec.get("calibration"))})
    position = {c.id: i for i, c in enumerate(cases)}

    def listed(ids_by_scorer: dict[str, list[str]]) -> list[dict[str, Any]]:
        out = []
        for name, ids in ids_by_scorer.items():
            column = columns[name]
            out.append({"scorer": name, "cases": [
                {"case_id": c, "value": column["v"][position[c]], "error": column["e"].get(position[c]),
                 "candidate": cases[position[c]].candidate}
                for c in ids if c in position]})
        return out

    large = {"cases": suite.case_count, "shown": len(cases), "top": TOP_CASES, "sample": len(sample),
             "worst": listed(worst), "failing": listed(failing), "paged": case_ids is not None}
    return {"header": _header(run, suite, _usage(run, []), suite.case_count), "scorers": scorers,
            "at_k": retrieval_at_k(scorers), "table": _with_epochs(store, run, _table(scorers, cases, columns)), "large": large,
            "media": media_view.records(cases)}


def _cases_in_order(store, run, case_ids: list[str]) -> list[Any]:
    """The given cases in the order given (a dashboard page keeps its own order)."""
    by_id = {c.id: c for c in _cases_of(store, run, case_ids)}
    return [by_id[c] for c in case_ids if c in by_id]
