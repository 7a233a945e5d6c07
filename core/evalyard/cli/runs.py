"""``evalyard runs list|show|export|delete``: the run history."""

from __future__ import annotations

import json

import click

from .options import CLIError, current_app, db_option, echo_json, fmt, json_option, open_store, stats_table, table


@click.group()
def runs():
    """Runs kept in the database."""


@runs.command("list")
@click.option("--suite", help="Only runs of this suite.")
@click.option("--limit", "-n", default=50, show_default=True, type=click.IntRange(0), help="0 for all.")
@json_option
@db_option
def list_runs(suite, limit, as_json, db_url):
    """List runs, newest first."""
    store = open_store(db_url)
    rows = store.list_runs(limit=limit or None, suite=suite)
    data = [
        {
            "run_id": r.id, "name": r.name, "suite": s.name, "suite_version": s.version, "status": r.status,
            "cases": s.case_count, "scorers": [sc["name"] for sc in r.scorers], "created_at": r.created_at.isoformat(),
            "means": {k: v.get("mean") for k, v in (r.totals or {}).get("scorers", {}).items()},
        }
        for r, s in rows
    ]
    if as_json:
        echo_json(data)
        return
    if not data:
        click.echo(f"no runs yet in {store.url}")
        return
    click.echo(table(
        ["run", "name", "suite", "status", "cases", "created", "scorers (mean)"],
        [[d["run_id"], d["name"], d["suite"], d["status"], d["cases"], d["created_at"][:19].replace("T", " "),
          ", ".join(f"{k}={fmt(v)}" for k, v in d["means"].items()) or ", ".join(d["scorers"])] for d in data],
    ))


@runs.command("show")
@click.argument("run_ref", metavar="RUN")
@json_option
@db_option
def show(run_ref, as_json, db_url):
    """Show a run's metadata and per-scorer statistics (RUN: id, id prefix, run name or suite name).

    A finished run (completed or failed) shows the statistics it stored when it ended; a run
    still running or interrupted gets them from SQL aggregates over its results so far, without
    the bootstrap interval (it needs every value, and changes while the run goes on).
    """
    from ..store.reading import run_statistics

    store = open_store(db_url)
    run = store.get_run(run_ref)
    suite = store.suite_of(run)
    scorer_stats, live = run_statistics(store, run)
    data = {
        "run_id": run.id, "name": run.name, "status": run.status,
        "suite": {"name": suite.name, "version": suite.version, "cases": suite.case_count, "source": suite.source},
        "created_at": run.created_at.isoformat(), "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "scorer_config": run.scorers, "generator": run.generator, "versions": run.versions,
        "results": store.result_count(run.id),
        "scorers": scorer_stats,
    }
    from .presentation import agreement_lines, judge_agreements

    agreement = judge_agreements(store, run.id)
    for scorer_name, view in agreement.items():
        scorer_stats[scorer_name]["agreement"] = view
    if as_json:
        echo_json(data)
        return
    click.echo(f"run {run.id} ({run.name})  status {run.status}")
    click.echo(f"suite {suite.name} v{suite.version}  {suite.case_count} cases  from {suite.source}")
    click.echo(f"created {data['created_at'][:19]}  finished {(data['finished_at'] or '-')[:19]}")
    click.echo(f"versions {json.dumps(run.versions)}")
    for s in run.scorers:
        click.echo(f"  {s['name']} v{s['version']} ({s['plugin']}) config={json.dumps(s['config'])} "
                   f"threshold={s['threshold']}{' (calibrated)' if s.get('calibration') else ''} "
                   f"fingerprint={s.get('fingerprint', '-')}")
    if run.generator:
        click.echo(f"generator {run.generator['name']} config={json.dumps(run.generator.get('config'))}")
    click.echo(f"results {data['results']} of {suite.case_count * len(run.scorers)}")
    click.echo(stats_table(scorer_stats))
    if live:
        click.echo(f"live statistics of a {run.status} run ({', '.join(live)}): the results stored so far")
    from .presentation import aggregate_lines, clustered_lines

    clustered = {name: s["clustered"] for name, s in scorer_stats.items() if s.get("clustered")}  # run --cluster
    for line in aggregate_lines(scorer_stats) + clustered_lines(clustered) + agreement_lines(agreement):
        click.echo(line)


@runs.command("export")
@click.argument("run_ref", metavar="RUN")
@click.option("--format", "fmt_name", default="jsonl", show_default=True, metavar="NAME",
              help="An output format: jsonl, csv, parquet (needs pyarrow: pip install 'evalyard[parquet]'), junit, "
                   "html, markdown, otel, or one a plugin registers (`evalyard plugins`).")
@click.option("--output", "-o", metavar="TARGET",
              help="File to write (default: stdout, or the format's own default file); for otel, the endpoint.")
@click.option("--trials", is_flag=True,
              help="A run made with --epochs N: one line per trial (case, epoch, scorer) instead of per result, "
                   "with its epoch and the epoch's generated output (jsonl, csv, parquet).")
@db_option
def export(run_ref, fmt_name, output, trials, db_url):
    """Export a run with an output format. The table formats hold one line per result:
    case_id, scorer, value, label, passed, details, error.

    Results come in the suite's case order, then the run's scorer order, streamed from the
    database: memory stays the same whatever the size of the run.

    With --trials (a run made with --epochs N), the table formats hold one line per trial
    instead, the scores each case's result was reduced from: case_id, epoch, scorer, value,
    label, passed, details, error, output, output_error (the epoch's generated text and its
    error; empty when the run scored the cases' own candidates), in case order, then epoch,
    then scorer order, streamed the same way.
    """
    from ..outputs import RunSource, write_output

    app = current_app()
    output_format = app.registry.outputs.get(fmt_name)
    if trials and not output_format.trials:
        raise CLIError(f"--trials needs a table format (jsonl, csv, parquet); {fmt_name} writes the run's results")
    if output_format.check is not None:
        output_format.check()
    store = app.open_store(db_url)
    run = store.get_run(run_ref)
    if trials:
        from ..store.trials import has_trials

        if not has_trials(store, run.id):
            epochs = (run.settings or {}).get("epochs", 1)
            why = "no trial is stored yet" if epochs > 1 else "it was not made with --epochs N"
            raise CLIError(f"run {run.id} ({run.name}) has no trials: {why}; export it without --trials")
    target = output or ("-" if output_format.stdout else None)
    warning = write_output(output_format, RunSource(store, run, app.settings, trials=trials), target)
    if warning:
        click.echo(warning, err=True)


@runs.command("delete")
@click.argument("run_ref", metavar="RUN")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@db_option
def delete(run_ref, yes, db_url):
    """Delete a run and its results."""
    store = open_store(db_url)
    run = store.get_run(run_ref)
    if not yes:
        click.confirm(f"delete run {run.id} ({run.name}) and its results?", abort=True)
    store.delete_run(run.id)
    click.echo(f"deleted run {run.id}")


def register(cli: click.Group) -> None:
    cli.add_command(runs)
