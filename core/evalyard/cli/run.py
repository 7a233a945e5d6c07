"""``evalyard run``: score a suite (or resume a run) and print its summary."""

from __future__ import annotations

import sys

import click

from .options import db_option, echo_json, json_option, open_store, stats_table


def _parse_fail_under(values: tuple[str, ...]) -> list[tuple[str, float]]:
    from . import CLIError

    checks = []
    for text in values:
        name, eq, number = text.partition("=")
        try:
            if not eq:
                raise ValueError
            checks.append((name.strip(), float(number)))
        except ValueError:
            raise CLIError(f"--fail-under {text!r}: expected NAME=NUMBER") from None
    return checks


@click.command()
@click.argument("suite", required=False, type=click.Path(dir_okay=False))
@click.option("--scorer", "-s", "scorers", multiple=True, metavar="NAME[:key=value,...]",
              help="Scorer to run, with config (repeatable). Replaces the suite's scorer list.")
@json_option
@click.option("--fail-under", multiple=True, metavar="NAME=VALUE",
              help="Exit 1 when scorer NAME's mean is below VALUE (repeatable).")
@click.option("--resume", "resume_id", metavar="RUN_ID", help="Finish an interrupted run: score only what is missing.")
@click.option("--concurrency", "-j", default=4, show_default=True, type=click.IntRange(1, 256),
              help="Batches scored at once.")
@click.option("--max-errors", type=click.IntRange(0), default=None,
              help="Stop the run once more than this many scorer errors occurred.")
@click.option("--name", default="", help="A name for the run (default: its id).")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), metavar="FILE",
              help="Also write JUnit XML for CI: one test case per case x scorer.")
@db_option
def run(suite, scorers, as_json, fail_under, resume_id, concurrency, max_errors, name, junit_path, db_url):
    """Score SUITE (a YAML suite, or a JSONL/JSON/CSV data file) and keep the run.

    Exit codes: 0 ok, 1 a --fail-under check failed or the run stopped at
    --max-errors, 2 bad usage or bad input (nothing is written then).
    """
    from ..registry import get_registry
    from ..runner import RunAborted, Runner, check_required_fields, prepare_scorers
    from ..suite_files import load_suite, parse_scorer_option
    from . import CLIError

    checks = _parse_fail_under(fail_under)
    registry = get_registry()

    if resume_id:
        if scorers:
            raise CLIError("--resume continues a run with its own scorers; drop --scorer")
        store = open_store(db_url)
        run_row = store.get_run(resume_id)
        if run_row.status == "completed":
            raise CLIError(f"run {run_row.id} is already completed")
        from ..suite import ScorerSpec

        specs = [ScorerSpec(s["name"], s["config"], s.get("threshold"), origin=f"run {run_row.id}")
                 for s in run_row.scorers]
        prepared = prepare_scorers(specs, registry)
        cases = store.run_cases(run_row)
        run_id, suite_name = run_row.id, store.suite_of(run_row).name
    else:
        if not suite:
            raise CLIError("give a SUITE file, or --resume RUN_ID")
        loaded, origins = load_suite(suite, registry)
        specs = [parse_scorer_option(s) for s in scorers] if scorers else loaded.scorers
        if scorers:  # a suite's own config for a scorer still applies when --scorer names it
            by_name = {s.name: s for s in loaded.scorers}
            for spec in specs:
                base = by_name.get(spec.name)
                if base:
                    spec.config = {**base.config, **spec.config}
                    spec.threshold = spec.threshold if spec.threshold is not None else base.threshold
        prepared = prepare_scorers(specs, registry)
        check_required_fields(loaded.cases, origins, prepared)
        # Only now, with all input checked, does anything touch the database.
        store = None
        cases, suite_name = loaded.cases, loaded.name
        run_id = None

    unknown = [n for n, _ in checks if n not in {p.name for p in prepared}]
    if unknown:
        raise CLIError(f"--fail-under {unknown[0]}: scorer is not part of this run")

    runner = Runner(store, concurrency=concurrency, max_errors=max_errors)
    total = (sum(len(todo) for _, todo in runner.pending(run_id, cases, prepared)) if resume_id
             else len(cases) * len(prepared))
    bar = None
    if sys.stderr.isatty() and not as_json and total:
        bar = click.progressbar(length=total, label="scoring", file=sys.stderr, show_pos=True)
        bar.__enter__()
        runner.on_progress = bar.update
    aborted = None
    try:
        if resume_id:
            totals = runner.execute(run_id, cases, prepared)
        else:
            totals = runner.execute_new(loaded, prepared, lambda: open_store(db_url), name=name, source=str(suite))
            run_id, store = runner.run_id, runner.store
    except KeyboardInterrupt:
        if bar:
            bar.__exit__(None, None, None)
            bar = None
        click.echo(f"\ninterrupted; results so far are kept. Resume with: evalyard run --resume {runner.run_id}",
                   err=True)
        sys.exit(130)
    except RunAborted as exc:
        aborted = str(exc)
        run_id, store, totals = runner.run_id, runner.store, exc.totals
    finally:
        if bar:
            bar.__exit__(None, None, None)

    failed_checks = []
    for scorer_name, minimum in checks:
        mean = totals["scorers"][scorer_name]["mean"]
        if mean is None or mean < minimum:
            failed_checks.append({"scorer": scorer_name, "minimum": minimum, "mean": mean})

    run_row = store.get_run(run_id)
    if as_json:
        echo_json({
            "run_id": run_id,
            "name": run_row.name,
            "suite": suite_name,
            "status": run_row.status,
            "cases": len(cases),
            "duration_s": totals["duration_s"],
            "scorers": totals["scorers"],
            "failed_checks": failed_checks,
            "error": aborted,
        })
    else:
        click.echo(f"run {run_id}  suite {suite_name}  {len(cases)} cases  {run_row.status} in {totals['duration_s']:.2f}s")
        click.echo(stats_table(totals["scorers"]))
        for check in failed_checks:
            click.echo(f"FAILED: {check['scorer']} mean {check['mean']} is below {check['minimum']}", err=True)
        if aborted:
            click.echo(f"FAILED: {aborted}. Resume with: evalyard run --resume {run_id}", err=True)
    if junit_path:
        from ..junit import write_junit

        write_junit(store, run_id, junit_path)
    store.close()
    if failed_checks or aborted:
        sys.exit(1)


def register(cli: click.Group) -> None:
    cli.add_command(run)
