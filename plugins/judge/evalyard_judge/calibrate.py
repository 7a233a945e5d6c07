"""``evalyard calibrate``: how well a scorer agrees with human labels.

Input: a data file (or suite) whose cases carry a human label (``metadata.human_label`` by
default, or any metadata key / column with ``--label``), and either an existing run
(``--run``) or a scorer to run now (``--scorer``). Cases are matched by id.
"""

from __future__ import annotations

from typing import Any

import click

from evalyard import InputError

DEFAULT_LABEL = "metadata.human_label"
SHOWN_DISAGREEMENTS = 10


def _label_of(case: Any, field: str) -> Any:
    if field.startswith("metadata."):
        return case.metadata.get(field[len("metadata."):])
    if field in ("input", "candidate", "reference"):
        return getattr(case, field)
    return case.metadata.get(field)  # a column the loader kept in metadata


def _run_scorer(run: Any, scorer: str | None) -> dict[str, Any]:
    described = run.scorers or []
    if scorer is None:
        if len(described) != 1:
            names = ", ".join(s["name"] for s in described) or "none"
            raise click.UsageError(f"run {run.id} has several scorers ({names}): choose one with --scorer")
        return described[0]
    for entry in described:
        if scorer in (entry["name"], entry.get("qualified")):
            return entry
    names = ", ".join(s["name"] for s in described) or "none"
    raise click.UsageError(f"run {run.id} has no scorer {scorer!r} (it has: {names})")


def calibration(app: Any, data: str, *, run_ref: str | None, scorer: str | None, label_field: str,
                positive: str | None, judge_model: str | None, db: str | None, concurrency: int) -> dict[str, Any]:
    from .agreement import Pair, agreement_report

    suite, _ = app.load_suite(data)
    labels = {c.id: _label_of(c, label_field) for c in suite.cases}
    if all(v is None or v == "" for v in labels.values()):
        raise InputError(f"no case carries a human label in {label_field} (choose the field with --label)",
                         path=data)
    if run_ref is None:
        if scorer is None:
            raise click.UsageError("give --run RUN_ID (an existing run) or --scorer NAME (to score the cases now)")
        result = app.evaluate(data, [scorer], db=db, judge_model=judge_model, concurrency=concurrency,
                              name=f"calibrate {scorer}")
        run_ref = result.run_id
        scorer = result.summary and next(iter(result.summary))
    store = app.open_store(db)
    run = store.get_run(run_ref)
    entry = _run_scorer(run, scorer)
    results = {r.case_id: r for r in store.results(run.id, entry["name"])}
    pairs, skipped = [], {"no_human_label": 0, "no_result": 0, "scorer_error": 0, "no_verdict": 0}
    for case in suite.cases:
        human = labels[case.id]
        row = results.get(case.id)
        if human is None or human == "":
            skipped["no_human_label"] += 1
        elif row is None:
            skipped["no_result"] += 1
        elif row.error is not None:
            skipped["scorer_error"] += 1
        elif row.value is None and row.label is None:
            skipped["no_verdict"] += 1
        else:
            pairs.append(Pair(case.id, human, row.value, row.label, row.details or {}))
    if not pairs:
        raise InputError(f"no case has both a human label and a verdict of {entry['name']} in run {run.id} "
                         f"(skipped: {', '.join(f'{k}={v}' for k, v in skipped.items() if v)})", path=data)
    report = agreement_report(pairs, higher_is_better=entry.get("higher_is_better", True),
                              scorer_threshold=entry.get("threshold"), positive=positive)
    return {"data": data, "label_field": label_field, "run_id": run.id, "scorer": entry["name"],
            "cases": len(suite.cases), "skipped": skipped, **report}


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def render_text(report: dict[str, Any], show: int) -> str:
    from evalyard import table

    skipped = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in report["skipped"].items() if v)
    lines = [f"{report['scorer']} vs {report['label_field']} (run {report['run_id']}): {report['cases']} cases, "
             f"{report['compared']} compared" + (f" (skipped: {skipped})" if skipped else ""),
             f"human labels: {report['human_kind']}"]
    agreement = report["labels"]
    if agreement:
        lines.append(f"accuracy {_fmt(agreement['accuracy'])}   Cohen's kappa {_fmt(agreement['kappa'])}   "
                     f"(n={agreement['n']}, compared by {agreement['basis']})")
    correlation = report["correlation"]
    if correlation:
        lines.append(f"Spearman {_fmt(correlation['spearman'])}   Pearson {_fmt(correlation['pearson'])}   "
                     f"(n={correlation['n']})")
    best = report["threshold"]
    if best:
        text = (f"best threshold: value {best['direction']} {best['threshold']:g} -> accuracy "
                f"{_fmt(best['accuracy'])}, kappa {_fmt(best['kappa'])}")
        if "scorer_threshold" in best:
            text += (f" (the scorer's threshold {best['scorer_threshold']:g}: accuracy "
                     f"{_fmt(best['accuracy_at_scorer_threshold'])})")
        lines.append(text)
    if agreement:
        labels = agreement["confusion"]["labels"]
        rows = [[f"human {label}"] + row for label, row in zip(labels, agreement["confusion"]["matrix"])]
        lines += ["", "confusion matrix (rows: human, columns: scorer)", table([""] + labels, rows)]
    disagreements = report["disagreements"]
    if disagreements:
        lines += ["", f"disagreements: {len(disagreements)}" + (f" (first {show})" if len(disagreements) > show else "")]
        rows = [[d["id"], d["human"], d["scorer"], _fmt(d["value"]), (d["reasoning"] or "-")[:70]]
                for d in disagreements[:show]]
        lines.append(table(["case", "human", "scorer", "value", "reasoning"], rows))
    return "\n".join(lines)


@click.command("calibrate")
@click.argument("data", type=click.Path(exists=True, dir_okay=False))
@click.option("--run", "run_ref", metavar="RUN_ID", help="Use this run's results (id, id prefix or run name).")
@click.option("--scorer", "-s", metavar="NAME[:key=value,...]",
              help="The scorer to compare (runs it on DATA first when --run is not given).")
@click.option("--label", "label_field", default=DEFAULT_LABEL, show_default=True, metavar="FIELD",
              help="Where the human label is: metadata.KEY, a column name, or input/reference.")
@click.option("--positive", metavar="LABEL", help="The human label that counts as positive (binary labels whose "
                                                  "spelling is not yes/no, true/false, 1/0, pass/fail ...).")
@click.option("--judge-model", metavar="MODEL", envvar="EVALYARD_JUDGE_MODEL",
              help="Judge model for --scorer (default: $EVALYARD_JUDGE_MODEL).")
@click.option("--prompts-dir", "prompts_dirs", multiple=True, type=click.Path(file_okay=False),
              help="A directory of prompt templates that override built-in and plugin ones (repeatable).")
@click.option("--concurrency", "-j", default=4, show_default=True, type=click.IntRange(1, 1024))
@click.option("--show", default=SHOWN_DISAGREEMENTS, show_default=True, type=click.IntRange(0),
              help="How many disagreeing cases to print (all of them are in --json).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option("--db", "db_url", envvar="EVALYARD_DB", metavar="URL", help="Database (default: evalyard.db in the "
                                                                        "data directory).")
def calibrate_command(data, run_ref, scorer, label_field, positive, judge_model, prompts_dirs, concurrency, show,
                      as_json, db_url):
    """How well a scorer agrees with human labels on DATA: accuracy, Cohen's kappa, Spearman and
    Pearson, a confusion matrix, the best threshold for a numeric scorer against binary labels,
    and the cases where they disagree.

    \b
    evalyard calibrate examples/calibrate.jsonl --scorer contains
    evalyard calibrate labelled.jsonl --run RUN_ID --scorer qa_correctness --json
    """
    from evalyard import current_app, echo_json

    try:
        app = current_app()
        app.use_prompt_dirs(prompts_dirs)
        report = calibration(app, data, run_ref=run_ref, scorer=scorer, label_field=label_field, positive=positive,
                             judge_model=judge_model, db=db_url, concurrency=concurrency)
    except click.UsageError as exc:  # one line and exit 2, like the core's bad-usage errors
        from evalyard import CLIError

        raise CLIError(exc.message) from None
    if as_json:
        echo_json(report)
    else:
        click.echo(render_text(report, show))
