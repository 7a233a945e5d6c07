"""What ``evalyard run`` prints: the run's summary (its statistics, corpus figures, clustered
intervals, judges' agreement, usage and failed checks) and ``--plan``'s forecast table. The run
itself is ``Application.run``'s; nothing here computes anything but text."""

from __future__ import annotations

from typing import Any

import click

from .options import echo_json, stats_table


def print_outcome(outcome, as_json: bool, out=None) -> None:
    """The outcome on ``out`` (default stdout; text or ``--json``), warnings and failures on stderr."""
    from ..models.usage import format_cost

    if outcome.result is None:  # a forecast, or a run refused for its forecast cost
        forecast = outcome.forecast
        key = "batch_cost" if forecast["batch"] else "cost"
        cost = format_cost(forecast["totals"][key], forecast["totals"][key + "_complete"])
        if outcome.forecast_only:
            if as_json:
                echo_json(outcome.to_dict(), file=out)
            else:
                click.echo(format_plan(forecast), file=out)
            if outcome.refused:
                click.echo(f"planned cost {cost} exceeds --max-cost ${outcome.max_cost:g}", err=True)
        else:
            click.echo(f"refused: the plan costs {cost}, more than --max-cost ${outcome.max_cost:g}; nothing was "
                       "run or stored (see `--plan`; --run-to-cap runs up to the cap)", err=True)
        return
    result = outcome.result
    if as_json:
        echo_json(outcome.to_dict(), file=out)
    else:
        click.echo(f"run {result.run_id}  suite {result.suite}  {result.cases} cases  {result.status} "
                   f"in {result.duration_s:.2f}s", file=out)
        click.echo(stats_table(result.scorers), file=out)
        for line in (aggregate_lines(result.scorers) + epoch_lines(result.scorers)
                     + clustered_lines(outcome.clustered or {})
                     + agreement_lines(outcome.agreement)):
            click.echo(line, file=out)
        if result.usage:
            click.echo(usage_line(result.usage), file=out)
    for warning in outcome.warnings:
        click.echo(warning, err=True)
    for check in outcome.failed_checks:
        click.echo(f"FAILED: {check['scorer']} mean {check['mean']} is below {check['minimum']}", err=True)
    if outcome.too_many_errors:
        limit = f"more than {outcome.fail_on_error:.0%}" if outcome.fail_on_error is not None else "every result"
        click.echo(f"FAILED: {outcome.error_share:.0%} of results are scorer errors ({limit} tolerated: see "
                   f"`evalyard runs export {result.run_id}` for the messages)", err=True)
    if result.error:
        click.echo(f"FAILED: {result.error}. Resume with: evalyard run --resume {result.run_id}", err=True)


def format_plan(report: dict) -> str:
    """--plan's table (per scorer / generator and model, then the totals) and how each figure was made."""
    from ..models.usage import format_cost
    from .options import table

    rows = []
    for line in report["lines"]:
        label = f"{line['name']}" if line["kind"] == "scorer" else f"{line['name']} (generator)"
        if line["unknown"]:
            rows.append([label, "?", "unknown", "unknown", "unknown", "unknown", "unknown", "unknown", "unknown"])
        elif not line["models"]:
            rows.append([label, "-", "-", "0", "0", "0", "$0.0000", "$0.0000", _seconds(line["seconds"])])
        for m in line["models"]:
            rows.append([label, m["model"], f"{m['calls']} ({m['cache_hits']} cached)", f"{m['calls'] - m['cache_hits']}",
                         str(m["input_tokens"]), str(m["output_tokens"]), format_cost(m["cost"]),
                         format_cost(m["batch_cost"]), _seconds(m["seconds"])])
            label = ""
    t = report["totals"]
    rows.append(["total", "", f"{t['calls']} ({t['cache_hits']} cached)", str(t["calls"] - t["cache_hits"]),
                 str(t["input_tokens"]), str(t["output_tokens"]), format_cost(t["cost"], t["cost_complete"]),
                 format_cost(t["batch_cost"], t["batch_cost_complete"]), _seconds(t["seconds"])])
    head = ["", "model", "calls", "to make", "tokens in", "tokens out", "cost", "cost --batch", "time"]
    text = [f"plan for {report['suite']}" + (f" (resuming run {report['resume']}: what is missing)"
                                             if report["resume"] else "")
            + f": nothing was called or stored (-j {report['concurrency']})", table(head, rows), "how each figure was made:"]
    for line in report["lines"]:
        for m in line["models"]:
            text.append(f"  {line['name']} / {m['model']}: calls {m['calls_basis']}; tokens in: {m['input_basis']}; "
                        f"tokens out: {m['output_basis']}; cost: {m['cost_basis']} (batch: {m['batch_cost_basis']}); "
                        f"time: {m['time_basis']}")
        if line["time_basis"] and not line["models"]:
            text.append(f"  {line['name']}: calls no model; time: {line['time_basis']}")
        for note in line["notes"]:
            text.append(f"  {line['name']}: {note}")
    if report["startup"]:
        text.append("  start-up (in the total time): " + ", ".join(
            f"{s['what']} {s['seconds']:.1f}s" for s in report["startup"]))
    return "\n".join(text)


def _seconds(value: "float | None") -> str:
    if value is None:
        return "unknown"
    return f"{value:.1f}s" if value < 120 else f"{value / 60:.1f}min"


def usage_line(usage: dict) -> str:
    """Model calls, cache hits, tokens and cost (an unknown price is "unknown", never $0)."""
    from ..models.usage import format_cost

    return (f"model calls {usage.get('calls', 0)} ({usage.get('cache_hits', 0)} from cache, "
            f"{usage.get('retries', 0)} retries)  tokens {usage.get('prompt_tokens', 0)} in / "
            f"{usage.get('completion_tokens', 0)} out  cost {format_cost(usage.get('cost'), usage.get('cost_complete', True))}")


def judge_agreements(store, run_id: str) -> dict:
    """Each judge's agreement with people (its saved calibration) or "uncalibrated", by scorer name."""
    from ..figures.calibrations import agreements

    return agreements(store, store.get_run(run_id).scorers)


def agreement_lines(agreement: dict) -> list[str]:
    """Each calibrated scorer's agreement line, then its judge card and warnings, indented under it;
    the judges without a saved calibration together on one line."""
    out, uncalibrated = [], []
    for name, view in agreement.items():
        if view.get("status") == "uncalibrated":
            uncalibrated.append(name)
            continue
        first, *rest = view.get("lines") or [view["line"]]
        out += [f"{name}: {first}", *(f"  {line}" for line in rest)]
    if uncalibrated:
        out.append(f"uncalibrated judges (no saved calibration: evalyard calibrate DATA --scorer NAME --save): "
                   f"{', '.join(uncalibrated)}")
    return out


def aggregate_lines(scorers: dict, width: int = 100) -> list[str]:
    """Each scorer's corpus-level metrics (or a recorded aggregate error), wrapped to ``width``."""
    import textwrap

    from .options import fmt

    lines = []
    for name, summary in scorers.items():
        metrics = summary.get("aggregate") or {}
        if metrics:
            text = ", ".join(f"{k}={fmt(v)}" for k, v in metrics.items())
            lines += textwrap.wrap(text, width, initial_indent=f"{name} aggregate: ", subsequent_indent="    ",
                                   break_long_words=False, break_on_hyphens=False)
        if summary.get("aggregate_error"):
            lines.append(f"{name} aggregate error: {summary['aggregate_error']}")
    return lines


#: how each reducer's figure reads in a sentence
_REDUCED = {"mean": "mean", "median": "median", "mode": "most frequent value", "max": "best", "min": "worst"}


def epoch_lines(scorers: dict[str, Any]) -> list[str]:
    """One line per scorer of a run with --epochs: how cases were reduced, and how stable the
    verdicts were from one epoch to the next (the share of cases whose verdict changed, the
    pooled within-case standard deviation)."""
    from .options import fmt

    lines = []
    for name, summary in scorers.items():
        epochs = summary.get("epochs")
        if not epochs:
            continue
        reducer = epochs["reducer"]
        how = (f"{_REDUCED[reducer]} of each case's epochs" if reducer in _REDUCED
               else f"{reducer} over each case's epochs")
        if epochs["cases"]:
            stable = (f"verdict changed across epochs on {epochs['unstable']} of {epochs['cases']} cases "
                      f"({epochs['unstable_share']:.0%}), within-case sd {fmt(epochs['within_case_sd'])}")
        else:
            stable = "no case had two scored epochs to compare"
        lines.append(f"{name}: {epochs['n']} epochs, {how}; {stable}")
    return lines


def clustered_lines(clustered: dict[str, Any]) -> list[str]:
    """One line per scorer: the clustered interval beside the naive one."""
    from .options import fmt

    lines = []
    for name, c in (clustered or {}).items():
        low, high = c["ci95"]
        naive = c.get("naive_ci95")
        beside = f" (naive [{fmt(naive[0])}, {fmt(naive[1])}])" if naive else ""
        effect = f", design effect {c['design_effect']:.2f}" if c.get("design_effect") is not None else ""
        lines.append(f"{name}: clustered by {c['field']} ({c['clusters']} clusters): mean {fmt(c['mean'])}, "
                     f"95% CI [{fmt(low)}, {fmt(high)}]{beside}, SE {fmt(c['se'])}{effect}")
    return lines
