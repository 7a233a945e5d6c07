"""Experiments on the command line: ``evalyard run SUITE -m A -m B [--prompt P ...] [--param
NAME=V1,V2]`` runs a grid (each cell an ordinary run) and prints one comparison across it;
``evalyard experiments list|show`` reads them back."""

from __future__ import annotations

from typing import Any

import click

from .options import current_app, db_option, echo_json, fmt, json_option, table


def run_grid(app, request, cells: list, name: str, as_json: bool, out) -> bool:
    """Run (or resume, with ``request.resume`` naming an experiment) the grid and print it; True
    when a cell failed a check."""
    from ..experiments import ExperimentRequest

    resume, request.resume = request.resume, None
    outcome = app.experiment(ExperimentRequest(run=request, cells=cells, name=name, resume=resume))
    if as_json:
        echo_json(outcome.to_dict(), file=out)
    elif outcome.forecast is not None:
        click.echo(format_grid_forecast(outcome), file=out)
    else:
        click.echo(format_grid(outcome.experiment_id, outcome.name, outcome.comparison), file=out)
    for cell, cell_outcome in zip(outcome.cells, outcome.outcomes):
        for warning in cell_outcome.warnings:
            click.echo(f"{cell.label}: {warning}", err=True)
        for check in cell_outcome.failed_checks:
            click.echo(f"FAILED: {cell.label}: {check['scorer']} mean {check['mean']} is below {check['minimum']}",
                       err=True)
        if cell_outcome.result is not None and cell_outcome.result.error:
            click.echo(f"FAILED: {cell.label}: {cell_outcome.result.error}. Resume with: evalyard run --resume "
                       f"{outcome.experiment_id}", err=True)
    return outcome.failed


def format_grid(experiment_id: str | None, name: str, comparison: dict[str, Any]) -> str:
    """Cells x scorers: mean [95% CI], the paired difference to the baseline (cell 0) with its
    Holm-adjusted p-value, * on the quality-cost frontier; then calls, tokens, cost and the
    median generation latency per cell; with epochs, each scorer's stability in a second table."""
    from ..models.usage import format_cost, format_latency

    rows = comparison["cells"]
    scorers = list(rows[0]["scorers"]) if rows else []
    head = ["cell", "run"] + scorers + ["calls (cached)", "tokens in/out", "cost", "latency (median)"]
    body = []
    for row in rows:
        line = [f"{row['cell']}: {row['label']}", row["run_id"]]
        for scorer in scorers:
            s = row["scorers"].get(scorer) or {}
            text = fmt(s.get("mean")) + (f" [{fmt(s['ci95'][0])}, {fmt(s['ci95'][1])}]" if s.get("ci95") else "")
            versus = s.get("versus_baseline")
            if versus and versus.get("mean_delta") is not None:
                ci = versus.get("ci95")
                text += f" {versus['mean_delta']:+.3f}" + (f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "")
                if versus.get("p_holm") is not None:
                    text += f" p={versus['p_holm']:.3g}"
            elif row["cell"] == 0:
                text += " (baseline)"
            line.append(text + (" *" if s.get("frontier") else ""))
        line += [f"{row['calls']} ({row['cache_hits']})", f"{row['tokens_in']}/{row['tokens_out']}",
                 format_cost(row["cost"], row["cost"] is not None), format_latency(row["latency"]["median_ms"])]
        body.append(line)
    title = f"experiment {experiment_id} ({name}): {len(rows)} cells"
    note = (f"difference to cell 0, paired by case, 95% CI; p Holm-adjusted over {comparison['tests']} "
            "comparisons; * on the quality-cost frontier; latency: the median of the cell's generation calls")
    return "\n".join([title, table(head, body), note, *format_stability(rows, scorers)])


def format_stability(rows: list[dict[str, Any]], scorers: list[str]) -> list[str]:
    """With epochs: per cell and scorer, the cases whose verdict changed across epochs and the
    within-case standard deviation (how far one trial of a case can be trusted)."""
    if not any((r["scorers"].get(s) or {}).get("epochs") for r in rows for s in scorers):
        return []
    body = []
    for row in rows:
        line = [f"{row['cell']}: {row['label']}"]
        for scorer in scorers:
            epochs = (row["scorers"].get(scorer) or {}).get("epochs")
            if not epochs or not epochs.get("cases"):
                line.append("–")
                continue
            line.append(f"{epochs['unstable']}/{epochs['cases']} changed ({epochs['unstable_share']:.0%}), "
                        f"sd {fmt(epochs['within_case_sd'])}")
        body.append(line)
    return ["", "stability across epochs (cases whose verdict changed; within-case sd)",
            table(["cell"] + scorers, body)]


def format_grid_forecast(outcome) -> str:
    from ..models.usage import format_cost

    rows = []
    for line in outcome.forecast["cells"]:
        t = line["forecast"]["totals"]
        rows.append([f"{line['cell']}: {line['label']}", f"{t['calls']} ({t['cache_hits']} cached)",
                     str(t["calls"] - t["cache_hits"]), str(t["input_tokens"]), str(t["output_tokens"]),
                     format_cost(t["cost"], t["cost_complete"]), format_cost(t["batch_cost"], t["batch_cost_complete"]),
                     "unknown" if t["seconds"] is None else f"{t['seconds']:.1f}s"])
    t = outcome.forecast["totals"]
    rows.append(["total", f"{t['calls']} ({t['cache_hits']} cached)", str(t["calls"] - t["cache_hits"]),
                 str(t["input_tokens"]), str(t["output_tokens"]), format_cost(t.get("cost"), t.get("cost_complete", False)),
                 format_cost(t.get("batch_cost"), t.get("batch_cost_complete", False)),
                 "unknown" if t.get("seconds") is None else f"{t['seconds']:.1f}s"])
    head = ["cell", "calls", "to make", "tokens in", "tokens out", "cost", "cost --batch", "time"]
    return "\n".join([f"plan for the grid ({len(rows) - 1} cells): nothing was called or stored", table(head, rows)])


@click.group()
def experiments():
    """Experiments: grids of runs over one suite (`evalyard run SUITE -m A -m B ...`)."""


@experiments.command("list")
@click.option("--limit", "-n", default=50, show_default=True, type=click.IntRange(0), help="0 for all.")
@json_option
@db_option
def list_experiments(limit, as_json, db_url):
    """List experiments, newest first."""
    from ..store.experiments import cell_run_counts, list_experiments as listed

    store = current_app().open_store(db_url)
    rows = listed(store, limit or None)
    runs = cell_run_counts(store, [row.id for row in rows])
    data = [{"experiment_id": row.id, "name": row.name, "source": row.source, "cells": len(row.cells),
             "runs": runs.get(row.id, 0), "created_at": row.created_at.isoformat()} for row in rows]
    if as_json:
        echo_json(data)
        return
    if not data:
        click.echo(f"no experiments yet in {store.url}")
        return
    click.echo(table(["experiment", "name", "suite", "cells", "runs", "created"],
                     [[d["experiment_id"], d["name"], d["source"], d["cells"], d["runs"],
                       d["created_at"][:19].replace("T", " ")] for d in data]))


@experiments.command("show")
@click.argument("ref", metavar="EXPERIMENT")
@json_option
@db_option
def show_experiment(ref, as_json, db_url):
    """Show an experiment's comparison across its cells (EXPERIMENT: id, id prefix or name)."""
    from ..experiments import Cell, compare_cells
    from ..store.experiments import cell_runs, get_experiment

    store = current_app().open_store(db_url)
    row = get_experiment(store, ref)
    runs = cell_runs(store, row.id)
    cells = [Cell.from_dict(c) for c in row.cells]
    done = [i for i in range(len(cells)) if i in runs]
    comparison = compare_cells(store, [cells[i] for i in done], [runs[i] for i in done])
    if as_json:
        echo_json({"experiment_id": row.id, "name": row.name, "source": row.source,
                   "cells": [c.to_dict() for c in cells], "comparison": comparison})
        return
    click.echo(format_grid(row.id, row.name, comparison))
    missing = [cells[i].label for i in range(len(cells)) if i not in runs]
    if missing:
        click.echo(f"not started: {', '.join(missing)} (evalyard run --resume {row.id})", err=True)


@experiments.command("report")
@click.argument("ref", metavar="EXPERIMENT")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True),
              help="Where to write the page (default: evalyard-experiment-ID.html).")
@db_option
def report_experiment(ref, output, db_url):
    """Write an HTML page of EXPERIMENT: the grid (cells x scorers, coloured by the difference to
    the baseline, intervals on hover) and every cell's output and verdicts side by side for a
    sample of cases. Self-contained, as `evalyard report` is."""
    from pathlib import Path

    from ..report import static_page_media
    from ..report.experiment import build_experiment_report
    from ..store.experiments import get_experiment

    store = current_app().open_store(db_url)
    row = get_experiment(store, ref)
    path = Path(output or f"evalyard-experiment-{row.id}.html")
    path.write_text(build_experiment_report(store, row.id, media=static_page_media(store, path)), encoding="utf-8")
    click.echo(f"wrote {path} ({path.stat().st_size / 1024:,.0f} KiB) for experiment {row.id}")


def register(cli: click.Group) -> None:
    cli.add_command(experiments)
