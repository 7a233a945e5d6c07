"""``evalyard run``: score a suite (or resume a run) and print its summary."""

from __future__ import annotations

import contextlib
import os
import sys

import click

from .interrupts import exit_code, terminate_as_interrupt
from .options import CLIError, current_app, db_option, json_option


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
@click.option("--model", "-m", "gen_models", metavar="MODEL", multiple=True,
              help="Fill cases that have no candidate with this model's answers (the model under test). "
                   "Repeatable: several models (or prompts, or --param values) run a grid, an experiment of one "
                   "run per cell, compared in one table.")
@click.option("--prompt", "gen_prompts", metavar="TEMPLATE", multiple=True,
              help="With --model: render this prompt template with each case instead of sending its input "
                   "(repeatable: one cell per prompt).")
@click.option("--param", "params", metavar="NAME=V1,V2", multiple=True,
              help="With --model (or --generator NAME): a generation setting's values (e.g. temperature=0,0.7 or "
                   "top_k=5,10), one cell each (repeatable).")
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
@click.option("--epochs", type=click.IntRange(1), default=None, metavar="N",
              help="Generate and score each case N times (repeated trials: each epoch its own model call and "
                   "cache key, the seed set where the provider takes one); a case's score is its epochs reduced "
                   "(--reducer), and each scorer shows how stable its verdicts were across epochs.")
@click.option("--reducer", "reducers", multiple=True, metavar="[SCORER=]NAME[:k=N]",
              help="How a case's epochs make its score: mean (default), median, mode, max, min, pass_at_k:k=N, "
                   "at_least_k:k=N (optionally ,value=V: what counts as correct, default 1); for every scorer, or "
                   "SCORER=... for one (repeatable).")
@click.option("--extract", "extracts", multiple=True, metavar="[SCORER=]STEP",
              help="Read the answer as a user would before scoring it: code (the first fenced block; code:python), "
                   "regex:PATTERN (its first group), after:MARKER (the text after the last MARKER, e.g. after:####), "
                   "json:PATH, drop_reasoning (<think> blocks out), strip. Repeatable: steps apply in order; "
                   "SCORER=STEP for one scorer. An answer where a step finds nothing is that case's error.")
@click.option("--qrels", type=click.Path(dir_okay=False), metavar="FILE",
              help="Relevance judgements for retrieval scorers: TREC qrels (qid iteration docid grade) or, for a "
                   ".json file, {qid: {docid: grade}}; each case gets its own as `relevant`, by its id.")
@click.option("--allow-remote-media", is_flag=True,
              help="Pass images given by http(s) URL in the cases on to the models (the provider fetches them); "
                   "without it such a case is refused, so a run never reaches the network by surprise.")
@click.option("--output", "outputs", multiple=True, metavar="NAME[=TARGET]",
              help="After the run, also write it with this output format (repeatable): jsonl, csv, parquet, junit, "
                   "otel, html, markdown or a plugin's (`evalyard plugins`); TARGET is a file (default evalyard-RUN_ID.EXT) "
                   "or, for otel, the endpoint.")
@db_option
def run(suite, scorers, as_json, fail_under, fail_on_error, resume_id, concurrency, executor, data_format, fields,
        generator, max_errors, name, junit_path, judge_model, gen_models, gen_prompts, params, prompts_dirs, batch,
        no_cache, max_cost, run_to_cap, plan_only, verbose, calibrated, otel, cluster, epochs, reducers, extracts,
        qrels, allow_remote_media, outputs, db_url):
    """Score SUITE (a YAML suite, or a JSONL/JSON/CSV data file) and keep the run.

    Exit codes: 0 ok; 1 a --fail-under check failed, the share of errors exceeded
    --fail-on-error (by default: every result is an error), or the run stopped at
    --max-errors; 2 bad usage or bad input (nothing is written then); 130 stopped by
    Ctrl-C, 143 stopped by SIGTERM (results so far kept, the run marked interrupted:
    finish it with --resume).
    """
    from ..run_service import RunRequest
    from ..suite_files import parse_field_options, parse_scorer_option
    from ..experiments import grid_of
    from .experiments import run_grid
    from .presentation import print_outcome

    app = current_app()
    app.use_prompt_dirs(prompts_dirs)
    if verbose:
        _log_model_calls()
    _log_batch_progress()
    cells = grid_of(app, suite, gen_models, gen_prompts, params, resume_id, db_url,
                    generator=_parse_generator(generator)[0])
    generator_name, generator_config = _generator_choice(generator, gen_models, gen_prompts, params, cells is not None)
    wanted = [*_parse_outputs(outputs), *([("junit", junit_path)] if junit_path else []),
              *([("otel", None)] if otel else [])]
    progress = _Progress(enabled=sys.stderr.isatty() and not as_json)
    started: list[str] = []
    request = RunRequest(
        suite=suite, scorers=[parse_scorer_option(text) for text in scorers] or None, resume=resume_id, name=name,
        db=db_url, generator=generator_name, generator_config=generator_config, judge_model=judge_model,
        use_cache=not no_cache, max_cost=max_cost, run_to_cap=run_to_cap, concurrency=concurrency,
        executor=executor, format=data_format, field_map=parse_field_options(fields), batch=batch,
        calibrated=calibrated, max_errors=max_errors, fail_under=_parse_fail_under(fail_under),
        fail_on_error=fail_on_error, cluster=cluster, outputs=wanted, forecast_only=plan_only, epochs=epochs,
        reducers=[_parse_reducer_option(text) for text in reducers],
        extracts=[_parse_extract_option(text) for text in extracts], qrels=qrels,
        allow_remote_media=allow_remote_media,
        on_progress=progress.update, on_start=lambda run_id, total: (started.append(run_id), progress.start(total)))
    with results_stream() as out:
        restore_sigterm = terminate_as_interrupt()
        try:
            if cells is not None:
                sys.exit(1 if run_grid(app, request, cells, name, as_json, out) else 0)
            outcome = app.run(request)
        except KeyboardInterrupt as stop:
            progress.stop()
            if started:
                click.echo(f"\ninterrupted; results so far are kept. Resume with: evalyard run --resume {started[0]}",
                           err=True)
            sys.exit(exit_code(stop))
        finally:
            restore_sigterm()
            progress.stop()
        print_outcome(outcome, as_json, out)
    if outcome.failed:
        sys.exit(1)


def _parse_extract_option(text: str) -> tuple[str | None, str]:
    """``STEP`` for every scorer, or ``SCORER=STEP`` for one; a step's own argument may hold ``=``
    (``regex:a=(\\d+)``), so a text that starts with a step's name is a step."""
    from ..extraction import is_step

    if is_step(text):
        return None, text
    scorer, eq, step = text.partition("=")
    if not eq or not scorer.strip() or not step:
        raise CLIError(f"--extract {text!r}: expected [SCORER=]STEP (code, regex:..., after:..., json:..., "
                       "drop_reasoning, strip)")
    return scorer.strip(), step


def _parse_reducer_option(text: str) -> tuple[str | None, str]:
    """``NAME[:k=N]`` for every scorer, or ``SCORER=NAME[:k=N]`` for one (a reducer's own
    parameters come after its colon, so an ``=`` before any colon names the scorer)."""
    head, colon, _ = text.partition(":")
    scorer, eq, reducer = head.partition("=")
    if eq:
        if not scorer.strip():
            raise CLIError(f"--reducer {text!r}: expected [SCORER=]NAME[:k=N]")
        return scorer.strip(), reducer + colon + text.partition(":")[2]
    return None, text


def _generator_choice(generator: str | None, models: tuple[str, ...], prompts: tuple[str, ...],
                      params: tuple[str, ...], grid: bool) -> tuple[str | None, dict]:
    """``--generator NAME:config``, or ``--model MODEL [--prompt TEMPLATE]`` (the ``model`` generator);
    nothing for a grid, whose cells each name their own."""
    name, config = _parse_generator(generator)
    if (prompts or params) and not models and not grid:
        raise CLIError("--prompt and --param set the generation of --model MODEL: give the model too")
    if models and generator:
        raise CLIError("give either --model or --generator, not both")
    if models and not grid:  # no name: the suite's own generator gets the model, else `model` does
        name, config = None, {"model": models[0], **({"prompt": prompts[0]} if prompts else {})}
    return name, config



def _parse_outputs(values: tuple[str, ...]) -> list[tuple[str, str | None]]:
    out = []
    for text in values:
        name, eq, target = text.partition("=")
        if not name.strip() or (eq and not target.strip()):
            raise CLIError(f"--output {text!r}: expected NAME or NAME=TARGET")
        out.append((name.strip(), target.strip() if eq else None))
    return out


@contextlib.contextmanager
def results_stream():
    """The stream the run's own output (the summary, ``--json``) goes to: standard output, kept
    for it alone. While a run goes on, libraries print to stdout too (Ray's "Raylet is
    terminated" notice when a node dies): at the process's real stdout (file descriptor 1), fd 1
    is pointed at stderr for good and the results are written to a duplicate of the original, so
    ``run --json`` stays valid JSON whatever a library prints, now or at exit. Elsewhere (a
    captured stdout, as under click's test runner) Python-level prints are sent to stderr during
    the run."""
    previous = sys.stdout
    try:
        real = previous.fileno() == 1
    except (AttributeError, OSError, ValueError):
        real = False
    if not real:
        sys.stdout = sys.stderr
        try:
            yield previous
        finally:
            sys.stdout = previous
        return
    previous.flush()
    out = os.fdopen(os.dup(1), "w", encoding=previous.encoding or "utf-8", errors=previous.errors,
                    buffering=1)
    os.dup2(2, 1)
    try:
        yield out
    finally:
        out.flush()


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
