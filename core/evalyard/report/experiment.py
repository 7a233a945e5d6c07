"""One self-contained HTML page for an experiment: the grid (cells x scorers, coloured by the
difference to the baseline cell, the intervals and the stability across epochs on hover; tokens,
cost and median latency per cell) and the case view (a sample of cases, each with every cell's
output and each scorer's verdict side by side, and with ``--epochs`` every epoch's output and
verdicts). ``evalyard serve`` shows the same page with its cells linked to their runs.

The page stays small at any size: the grid has one row per cell, and the case view holds at
most ``CASES_SHOWN`` cases (evenly spaced through the suite, the cells' verdicts on them read
with bounded queries), whatever the number of cases.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ..store import Store

#: cases in the case view, at most
CASES_SHOWN = 60


def build_experiment_report(store: Store, ref: str, nav: list[tuple[str, str]] | None = None,
                            run_link: str | None = None,
                            media: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> str:
    """The page of experiment ``ref``. ``run_link``: a URL pattern with ``{run}`` that each
    cell's run links to (the dashboard's run page); None on the self-contained static page.
    ``media``: where the cases' images and audio come from, as in ``build_report``."""
    from ..experiments import Cell, compare_cells
    from ..scoring import Case
    from ..store.experiments import cell_runs, get_experiment
    from ..store.reading import cases_by_id, results_of_cases, sample_case_ids
    from .epochs import case_epochs, epochs_of
    from .media_view import records, static_sources
    from .render import render_page

    row = get_experiment(store, ref)
    runs = cell_runs(store, row.id)
    cells = [Cell.from_dict(c) for c in row.cells]
    done = [i for i in range(len(cells)) if i in runs]
    comparison = compare_cells(store, [cells[i] for i in done], [runs[i] for i in done])
    rows = comparison["cells"]
    scorers = list(rows[0]["scorers"]) if rows else []
    for r in rows:
        for name in scorers:
            entry = r["scorers"].get(name) or {}
            versus = entry.get("versus_baseline") or {}
            entry["shade"] = shade(versus.get("mean_delta"), r["higher_is_better"].get(name, True))
            entry["hover"] = hover_text(entry)
    cases: list[dict[str, Any]] = []
    if rows:
        base_run = store.get_run(rows[0]["run_id"])
        case_ids = sample_case_ids(store, base_run, store.suite_of(base_run).case_count, CASES_SHOWN)
        content = cases_by_id(store, base_run, case_ids)
        per_cell = []
        for r in rows:
            run = store.get_run(r["run_id"])
            outputs = {case_id: c["candidate"] for case_id, c in cases_by_id(store, run, case_ids).items()}
            verdicts: dict[str, dict[str, Any]] = {}
            for result in results_of_cases(store, run.id, case_ids):
                verdicts.setdefault(result.case_id, {})[result.scorer] = {
                    "value": result.value, "label": result.label, "passed": result.passed, "error": result.error,
                    "reducer": (result.details or {}).get("reducer")}
            r["epochs"] = epochs_of(run)
            per_cell.append((outputs, verdicts, case_epochs(store, run, case_ids, limit=CASES_SHOWN)))
        for case_id in case_ids:
            if case_id not in content:
                continue
            cells_view = [{"label": r["label"], "output": outputs.get(case_id), "verdicts": verdicts.get(case_id, {}),
                           "epochs": epochs.get(case_id, [])}
                          for r, (outputs, verdicts, epochs) in zip(rows, per_cell)]
            cases.append({"id": case_id, **content[case_id], "cells": cells_view,
                          "disagree": disagreement(cells_view, scorers), "changed": changed_across_epochs(cells_view)})
    missing = [cells[i].label for i in range(len(cells)) if i not in runs]
    found = records(Case(id=c["id"], input_parts=c["dialogue"].get("input_parts"), messages=c["dialogue"].get("messages"))
                    for c in cases)
    place = media or (lambda found: static_sources(store, found, None))
    return render_page("experiment.html.j2", nav=nav, media=place(found) if found else None,
                       experiment=row, rows=rows, scorers=scorers, cases=cases,
                       at_k=cells_at_k(rows, scorers),
                       tests=comparison["tests"], missing=missing, shown=CASES_SHOWN, run_link=run_link,
                       with_epochs=any(r.get("epochs", 1) > 1 for r in rows))


def cells_at_k(rows: list[dict[str, Any]], scorers: list[str]) -> list[dict[str, Any]]:
    """The cells compared by k: for each measure scored at several cutoffs (``recall@1``,
    ``recall@5``, ...), one chart with a line per cell of its mean against k, with 95% intervals."""
    from . import charts
    from .data import at_k_measures

    out = []
    for measure, ks in at_k_measures(scorers).items():
        series = [{"label": f"{r['cell']} {r['label']}", "points": [
            {"k": k, "scorer": name, "mean": (r["scorers"].get(name) or {}).get("mean"),
             "ci95": (r["scorers"].get(name) or {}).get("ci95")} for k, name in ks]} for r in rows]
        out.append({"measure": measure, "series": series, "svg": charts.at_k_svg(measure, series)})
    return out


def shade(delta: float | None, higher_is_better: bool) -> str:
    """A CSS class for the size and direction of a difference to the baseline."""
    if delta is None or abs(delta) < 1e-12:
        return ""
    better = (delta > 0) == bool(higher_is_better)
    size = abs(delta)
    step = 3 if size >= 0.2 else 2 if size >= 0.05 else 1
    return f"{'up' if better else 'down'}{step}"


def hover_text(entry: dict[str, Any]) -> str:
    parts = []
    epochs = entry.get("epochs") or {}
    if epochs.get("cases"):
        parts.append(f"{epochs['n']} epochs reduced by {epochs['reducer']}: the verdict changed on "
                     f"{epochs['unstable']} of {epochs['cases']} cases, within-case sd {epochs['within_case_sd']:.4f}")
    if entry.get("ci95"):
        parts.append(f"mean {entry['mean']:.4f}, 95% CI [{entry['ci95'][0]:.4f}, {entry['ci95'][1]:.4f}]")
    versus = entry.get("versus_baseline") or {}
    if versus.get("mean_delta") is not None:
        ci = versus.get("ci95")
        parts.append(f"difference to the baseline {versus['mean_delta']:+.4f}"
                     + (f", 95% CI [{ci[0]:+.4f}, {ci[1]:+.4f}]" if ci else "")
                     + f" over {versus['paired_cases']} paired cases (wins {versus['wins']}, losses {versus['losses']})"
                     + (f", p (Holm) {versus['p_holm']:.3g}" if versus.get("p_holm") is not None else ""))
    return "; ".join(parts)


def disagreement(cells_view: list[dict[str, Any]], scorers: list[str]) -> bool:
    """Whether the cells' verdicts on a case differ for some scorer (a case worth reading)."""
    for name in scorers:
        seen = {(c["verdicts"].get(name) or {}).get("passed") for c in cells_view}
        values = {(c["verdicts"].get(name) or {}).get("value") for c in cells_view}
        if len(seen) > 1 or len(values) > 1:
            return True
    return False


def changed_across_epochs(cells_view: list[dict[str, Any]]) -> bool:
    """Whether some cell's verdict on a case changed from one epoch to another (``stability``'s rule)."""
    from ..analysis.reducers import Trial, verdict_changed

    for cell in cells_view:
        by_scorer: dict[str, list[Trial]] = {}
        for epoch in cell["epochs"]:
            for name, v in epoch["verdicts"].items():
                by_scorer.setdefault(name, []).append(Trial(v["value"], v["label"], v["passed"], v["error"]))
        if any(verdict_changed(trials) for trials in by_scorer.values()):
            return True
    return False
