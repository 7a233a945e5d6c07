"""``evalyard run``: score a suite (or resume a run) and print its summary."""

from __future__ import annotations

import sys

import click

from .interrupts import exit_code, terminate_as_interrupt
from .options import CLIError, current_app, db_option, echo_json, json_option, stats_table


def _parse_fail_under(values: tuple[str, ...]) -> list[tuple[str, float]]:
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


def _parse_generator(text: str | None) -> tuple[str | None, dict[str, str]]:
    if not text:
        return None, {}
    from ..suite_files import parse_scorer_option

    spec = parse_scorer_option(text, option="--generator")
    if spec.threshold is not None:
        raise CLIError(f"--generator {text!r}: a generator has no threshold")
    return spec.name, spec.config


@click.command()
@click.argument("suite", required=False, type=click.Path(dir_okay=False))
@click.option("--scorer", "-s", "scorers", multiple=True, metavar="NAME[:key=value,...]",
              help="Scorer to run, with config (repeatable). Replaces the suite's scorer list.")
@json_option
@click.option("--fail-under", multiple=True, metavar="NAME=VALUE",
              help="Exit 1 when scorer NAME's mean is below VALUE (repeatable).")
@click.option("--fail-on-error", type=click.FloatRange(0, 1), default=None, metavar="RATIO",
              help="Exit 1 when more than this share of results are scorer errors "
                   "(default: only when every result is an error).")
@click.option("--resume", "resume_id", metavar="RUN_ID",
              help="Finish an interrupted run: do only what is missing. Alone, or with the run's own SUITE and "
                   "options (refused, naming the difference, when they describe another run); --executor may change.")
@click.option("--concurrency", "-j", default=4, show_default=True, type=click.IntRange(1, 1024),
              help="Model requests in flight (async scorers and generators), batches in flight (others).")
@click.option("--executor", metavar="NAME", help="Run every non-async scorer on this executor (thread, process, "
              "or one a plugin registers).")
@click.option("--format", "data_format", metavar="NAME",
              help="Read SUITE (a data file) as this data format (e.g. trust-eval); default: by its file ending.")
@click.option("--field", "fields", multiple=True, metavar="CASE_FIELD=COLUMN",
              help="Map a data file's column to a case field, as a suite's `fields:` does (repeatable), "
                   "e.g. --field reference=gold --field input=question.")
@click.option("--generator", "-g", metavar="NAME[:key=value,...]",
              help="Fill cases that have no candidate with this generator before scoring.")
@click.option("--max-errors", type=click.IntRange(0), default=None,
              help="Stop the run once more than this many scorer errors occurred.")
@click.option("--name", default="", help="A name for the run (default: its id).")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), metavar="FILE",
              help="Also write JUnit XML for CI: one test case per case x scorer.")
@click.option("--judge-model", metavar="MODEL", envvar="EVALYARD_JUDGE_MODEL",
              help="Model for judge scorers that name none (any litellm model string; env EVALYARD_JUDGE_MODEL).")
@click.option("--model", "gen_model", metavar="MODEL",
              help="Fill cases that have no candidate with this model's answers (the model under test).")
@click.option("--prompt", "gen_prompt", metavar="TEMPLATE",
              help="With --model: render this prompt template with each case instead of sending its input.")
@click.option("--prompts-dir", "prompts_dirs", multiple=True, type=click.Path(file_okay=False),
              help="A directory of your own prompt templates (repeatable); overrides built-in and plugin ones.")
@click.option("--batch", is_flag=True,
              help="Send model calls as provider batch jobs (OpenAI-compatible Batch API: about half the price, "
                   "answers within a day); resumable, cached like online calls.")
@click.option("--no-cache", is_flag=True, help="Call the models again instead of answering from the response cache.")
@click.option("--max-cost", type=click.FloatRange(min=0), metavar="USD",
              help="Refuse a run whose plan (see --plan) costs more than this; stop a run cleanly (resumable) once "
                   "model calls have cost this much.")
@click.option("--run-to-cap", is_flag=True, help="With --max-cost: run even when the plan costs more, stopping "
              "cleanly (resumable) once the cap is reached; without it such a run is refused before it starts.")
@click.option("--plan", "plan_only", is_flag=True, help="Say what the run would take (model calls and cache hits, "
              "tokens, cost online and with --batch, time) per scorer and generator, and how each figure was made; "
              "call no model and store nothing.")
@click.option("--verbose", "-v", is_flag=True, help="Log every model call's cache key inputs and hit or miss.")
@click.option("--calibrated", is_flag=True, help="Judges with a saved calibration (evalyard calibrate --save) use its "
              "fitted threshold, as `threshold: calibrated` does for one scorer.")
@click.option("--otel", is_flag=True, help="After the run, send it to an OpenTelemetry endpoint (OTLP/HTTP: "
              "EVALYARD_OTEL_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT, default http://localhost:4318): a span "
              "with each scorer's mean and 95% CI, one gen_ai.evaluation.result event per result.")
@click.option("--cluster", metavar="metadata.FIELD", help="Cases sharing this metadata value are one cluster (e.g. "
              "questions on one passage): also print and keep each scorer's cluster-robust interval beside the naive one.")
@db_option
def run(suite, scorers, as_json, fail_under, fail_on_error, resume_id, concurrency, executor, data_format, fields,
        generator, max_errors, name, junit_path, judge_model, gen_model, gen_prompt, prompts_dirs, batch, no_cache,
        max_cost, run_to_cap, plan_only, verbose, calibrated, otel, cluster, db_url):
    """Score SUITE (a YAML suite, or a JSONL/JSON/CSV data file) and keep the run.

    Exit codes: 0 ok; 1 a --fail-under check failed, the share of errors exceeded
    --fail-on-error (by default: every result is an error), or the run stopped at
    --max-errors; 2 bad usage or bad input (nothing is written then); 130 stopped by
    Ctrl-C, 143 stopped by SIGTERM (results so far kept, the run marked interrupted:
    finish it with --resume).
    """
    app = current_app()
    app.use_prompt_dirs(prompts_dirs)
    if verbose:
        _log_model_calls()
    _log_batch_progress()
    checks = _parse_fail_under(fail_under)
    if cluster:
        from ..analysis.clustering import parse_cluster

        parse_cluster(cluster)  # a malformed option fails before the run, not after it
    generator_name, generator_config = _parse_generator(generator)
    if gen_prompt and not gen_model:
        raise CLIError("--prompt renders the prompt for --model MODEL: give the model too")
    if gen_model:
        if generator:
            raise CLIError("give either --model or --generator, not both")
        generator_name = "model"
        generator_config = {"model": gen_model, **({"prompt": gen_prompt} if gen_prompt else {})}
    from ..suite_files import parse_field_options

    field_map = parse_field_options(fields)
    if resume_id and not suite and (scorers or generator or gen_model or max_cost is not None or data_format
                                     or field_map or batch or calibrated):
        raise CLIError("--resume RUN_ID continues a run with its own suite, scorers, generator and limits: give "
                       "the run id alone, or repeat the run's whole command (SUITE and its options) with --resume")
    if not resume_id and not suite:
        raise CLIError("give a SUITE file, or --resume RUN_ID")
    if run_to_cap and max_cost is None:
        raise CLIError("--run-to-cap runs up to --max-cost USD: give the cap too")
    if otel:
        from ..otel import INSTALL_HINT, available

        if not available():
            raise CLIError(INSTALL_HINT)

    progress = _Progress(enabled=sys.stderr.isatty() and not as_json)
    started: list[str] = []
    restore_sigterm = terminate_as_interrupt()
    try:
        plan = None
        if suite:
            from ..suite_files import parse_scorer_option

            # Parsed here so that errors about a choice name the option it came from (--scorer).
            chosen = [parse_scorer_option(text) for text in scorers]
            plan = app.plan(suite, chosen or None, name=name, executor=executor, generator=generator_name,
                            generator_config=generator_config, judge_model=judge_model, use_cache=not no_cache,
                            max_cost=max_cost, concurrency=concurrency, format=data_format, field_map=field_map,
                            batch=batch, calibrated=calibrated)
            unknown = [n for n, _ in checks if n not in plan.scorer_names]
            if unknown:
                raise CLIError(f"--fail-under {unknown[0]}: scorer is not part of this run")
        if plan_only or (max_cost is not None and not run_to_cap):
            _planned(app, plan, db_url, concurrency, resume_id, executor, max_cost, as_json, plan_only)
        if resume_id:
            if plan is not None:  # the same command again, with --resume: it must describe that run
                app.check_resumable_as(resume_id, plan, db_url)
            progress.start(app.pending_count(resume_id, db_url))
            result = app.resume(resume_id, db=db_url, concurrency=concurrency, max_errors=max_errors,
                                on_progress=progress.update, executor=executor,
                                suite=plan.suite if plan is not None else None)
        else:
            result = app.execute(
                plan, db=db_url, concurrency=concurrency, max_errors=max_errors, on_progress=progress.update,
                on_start=lambda run_id, total: (started.append(run_id), progress.start(total)),
            )
    except KeyboardInterrupt as stop:
        progress.stop()
        run_id = resume_id or (started[0] if started else None)
        if run_id:
            click.echo(f"\ninterrupted; results so far are kept. Resume with: evalyard run --resume {run_id}", err=True)
        sys.exit(exit_code(stop))
    finally:
        restore_sigterm()
        progress.stop()

    unknown = [n for n, _ in checks if n not in result.scorers]
    if unknown:  # a resumed run's scorers are known only now
        raise CLIError(f"--fail-under {unknown[0]}: scorer is not part of this run")
    failed_checks = []
    for scorer_name, minimum in checks:
        mean = result.scorers[scorer_name]["mean"]
        if mean is None or mean < minimum:
            failed_checks.append({"scorer": scorer_name, "minimum": minimum, "mean": mean})
    share = result.error_share
    too_many_errors = share > fail_on_error if fail_on_error is not None else share == 1.0

    if junit_path:
        from ..junit import write_junit

        write_junit(app.open_store(db_url), result.run_id, junit_path)
    agreement = judge_agreements(app.open_store(db_url), result.run_id)
    clustered = None
    cluster = cluster or (plan.suite.cluster if plan is not None else None)  # a suite's `cluster:`
    if cluster:
        from ..services import cluster_run

        clustered = cluster_run(app.open_store(db_url), result.run_id, cluster)
    if as_json:
        data = result.to_dict()
        for scorer_name, view in agreement.items():
            data["scorers"][scorer_name]["agreement"] = view
        data["failed_checks"] = failed_checks
        data["error_share"] = share
        for scorer_name, view in (clustered or {}).items():
            data["scorers"][scorer_name]["clustered"] = view
        echo_json(data)
    else:
        click.echo(f"run {result.run_id}  suite {result.suite}  {result.cases} cases  {result.status} "
                   f"in {result.duration_s:.2f}s")
        click.echo(stats_table(result.scorers))
        for line in aggregate_lines(result.scorers):
            click.echo(line)
        for line in clustered_lines(clustered or {}):
            click.echo(line)
        for line in agreement_lines(agreement):
            click.echo(line)
        if result.usage:
            click.echo(usage_line(result.usage))
    if otel:  # after the run, from the database; a failing endpoint is a warning, never another exit code
        from ..otel import export_run

        warning = export_run(app.open_store(db_url), result.run_id, app.settings.otel_endpoint)
        if warning:
            click.echo(warning, err=True)
    for check in failed_checks:
        click.echo(f"FAILED: {check['scorer']} mean {check['mean']} is below {check['minimum']}", err=True)
    if too_many_errors:
        limit = f"more than {fail_on_error:.0%}" if fail_on_error is not None else "every result"
        click.echo(f"FAILED: {share:.0%} of results are scorer errors ({limit} tolerated: see "
                   f"`evalyard runs export {result.run_id}` for the messages)", err=True)
    if result.error:
        click.echo(f"FAILED: {result.error}. Resume with: evalyard run --resume {result.run_id}", err=True)
    if failed_checks or result.error or too_many_errors:
        sys.exit(1)


def _planned(app, plan, db_url, concurrency, resume_id, executor, max_cost, as_json, plan_only) -> None:
    """--plan: print the plan and exit (1 when it costs more than --max-cost). --max-cost alone:
    refuse, before anything is stored, a run whose plan costs more than the cap."""
    from ..app import close_prepared
    from ..models.usage import format_cost

    try:
        report = app.estimate(plan, db=db_url, concurrency=concurrency, resume=resume_id, executor=executor)
    except BaseException:
        if plan is not None:
            close_prepared(plan.scorers, plan.generator)
        raise
    totals = report["totals"]
    key = "batch_cost" if report["batch"] else "cost"
    planned = totals[key]
    over = max_cost is not None and planned is not None and planned > max_cost
    if plan_only:
        if plan is not None:
            close_prepared(plan.scorers, plan.generator)
        if max_cost is not None:
            report["max_cost"] = {"cap": max_cost, "planned": planned, "exceeds": over}
        if as_json:
            echo_json({"plan": report})
        else:
            click.echo(format_plan(report))
        if over:
            click.echo(f"planned cost {format_cost(planned, totals[key + '_complete'])} exceeds --max-cost "
                       f"${max_cost:g}", err=True)
        sys.exit(1 if over else 0)
    if over:
        if plan is not None:
            close_prepared(plan.scorers, plan.generator)
        click.echo(f"refused: the plan costs {format_cost(planned, totals[key + '_complete'])}, more than --max-cost "
                   f"${max_cost:g}; nothing was run or stored (see `--plan`; --run-to-cap runs up to the cap)",
                   err=True)
        sys.exit(1)
    if planned is None or not totals[key + "_complete"]:
        click.echo("evalyard: the plan's cost is not fully known (a model without a price): --max-cost stops the "
                   "run once what is known reaches it", err=True)


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
    from ..services import agreements

    return agreements(store, store.get_run(run_id).scorers)


def agreement_lines(agreement: dict) -> list[str]:
    """Each judge's agreement line, then its judge card and warnings, indented under it."""
    out = []
    for name, view in agreement.items():
        first, *rest = view.get("lines") or [view["line"]]
        out += [f"{name}: {first}", *(f"  {line}" for line in rest)]
    return out


def _log_model_calls() -> None:
    """--verbose: each model call's cache key inputs and whether the cache answered it, on stderr."""
    import json
    import logging

    class KeyInputs(logging.Formatter):
        def format(self, record):
            inputs = getattr(record, "key_inputs", None)
            text = super().format(record)
            return f"{text}\n  key inputs: {json.dumps(inputs, ensure_ascii=False, default=str)}" if inputs else text

    handler = logging.StreamHandler()
    handler.setFormatter(KeyInputs("evalyard: %(message)s"))
    logger = logging.getLogger("evalyard.models")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)


def _log_batch_progress() -> None:
    """Batch jobs submitted, done and failed, on stderr as they happen (a run may wait hours)."""
    import logging

    logger = logging.getLogger("evalyard.batch")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("evalyard: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


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


class _Progress:
    """A progress bar on a terminal's stderr; nothing otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bar = None
        self.total = None

    def start(self, total: int) -> None:
        if self.enabled and self.bar is None and total:
            self.bar = click.progressbar(length=total, label="scoring", file=sys.stderr, show_pos=True)
            self.bar.__enter__()

    def update(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


def register(cli: click.Group) -> None:
    cli.add_command(run)
