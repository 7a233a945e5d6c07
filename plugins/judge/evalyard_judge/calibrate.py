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


def _scorer_instance(app: Any, entry: dict[str, Any]) -> Any:
    """The run's scorer, to ask it for the value calibration should use (its stored config, else defaults)."""
    try:
        cls = app.registry.scorers.entry(entry.get("qualified") or entry["name"]).obj
    except Exception:  # a scorer no longer installed: its stored values still calibrate
        return None
    try:
        return cls(cls.make_config(entry.get("config") or {}))
    except Exception:
        return cls()


def _value_source(scorer: Any, asked: str) -> str:
    """``auto``: the scorer's ``calibration_value`` when it defines one, else its value."""
    if asked != "auto":
        return asked
    from evalyard import Scorer

    if scorer is not None and type(scorer).calibration_value is not Scorer.calibration_value:
        return "calibration_value"
    return "value"


def _file_hash(path: str) -> str:
    import hashlib

    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def _stored_labels(app: Any, db: str | None, run_ref: str | None, scorer: str | None) -> tuple[Any, str, str, str]:
    """The run's cases labelled in the database, as a labelled data file would give them."""
    from types import SimpleNamespace

    from evalyard.labels import labelled_cases

    if run_ref is None:
        raise click.UsageError("give DATA (a labelled data file), or --run RUN_ID whose cases were labelled "
                               "with `evalyard label`")
    store = app.open_store(db)
    run = store.get_run(run_ref)
    cases, data_hash = labelled_cases(store, run.id, _run_scorer(run, scorer)["name"])
    if not cases:
        raise InputError(f"run {run.id} has no labels in {store.url}: label its cases with `evalyard label {run.id}`, "
                         f"or give a labelled data file")
    return SimpleNamespace(cases=cases), data_hash, f"labels of run {run.id}", DEFAULT_LABEL


def calibration(app: Any, data: str | None, *, run_ref: str | None, scorer: str | None, label_field: str,
                positive: str | None, judge_model: str | None, db: str | None, concurrency: int,
                value: str = "auto", with_baselines: bool = True) -> dict[str, Any]:
    from evalyard import Score

    from .agreement import Pair, agreement_report

    if data is None:  # the labels people gave with `evalyard label`, kept with the run
        suite, data_hash, data, label_field = _stored_labels(app, db, run_ref, scorer)
    else:
        suite, _ = app.load_suite(data)
        data_hash = _file_hash(data)
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
    instance = _scorer_instance(app, entry)
    source = _value_source(instance, value)
    if source == "calibration_value" and instance is None:
        raise click.UsageError(f"scorer {entry['name']!r} is not installed: calibrate on --value value or details.KEY")
    from evalyard import source_value

    results = {r.case_id: r for r in store.results(run.id, entry["name"])}
    cases = {c.id: c for c in store.run_cases(run)}
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
        else:
            number = source_value(instance, Score(value=row.value, label=row.label, details=row.details or {}), source)
            if number is None and row.label is None:
                skipped["no_verdict"] += 1
                continue
            scored = cases.get(case.id, case)
            sources = "\n".join([*(scored.context or []), scored.reference or ""]).strip()
            pairs.append(Pair(case.id, human, number, row.label, row.details or {}, candidate=scored.candidate,
                              sources=sources or None))
    if not pairs:
        raise InputError(f"no case has both a human label and a verdict of {entry['name']} in run {run.id} "
                         f"(skipped: {', '.join(f'{k}={v}' for k, v in skipped.items() if v)})", path=data)
    report = agreement_report(pairs, higher_is_better=entry.get("higher_is_better", True),
                              scorer_threshold=_number_or_none(entry.get("threshold")), positive=positive,
                              with_baselines=with_baselines)
    out = {"data": data, "data_hash": data_hash, "label_field": label_field, "positive": positive,
           "run_id": run.id, "scorer": entry["name"], "qualified": entry.get("qualified"),
           "fingerprint": entry.get("fingerprint"), "fingerprint_data": entry.get("fingerprint_data"),
           "value": source, "cases": len(suite.cases), "skipped": skipped, **report}
    out["summary"] = summary(out)
    return out


def _number_or_none(value: Any) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def summary(report: dict[str, Any]) -> dict[str, Any]:
    """What a run shows of a saved calibration (the keys ``evalyard.calibration`` documents)."""
    labels = report["labels"] or {}
    best = report["threshold"] or {}
    return {"n": labels.get("n", report["compared"]), "accuracy": labels.get("accuracy"),
            "kappa": labels.get("kappa"), "basis": labels.get("basis"), "threshold": best.get("threshold"),
            "direction": best.get("direction"), "held_out": best.get("held_out"), "value": report["value"],
            "auc": report["auc"], "data": report["data"], "data_hash": report["data_hash"],
            "labels": report["label_field"], "positive": report["positive"], "balance": report["balance"]}


def save_calibration(app: Any, report: dict[str, Any], db: str | None) -> int:
    if not report.get("fingerprint"):
        raise InputError(f"run {report['run_id']} stored no fingerprint for {report['scorer']} (a run made before "
                         f"fingerprints): calibrate with --scorer to score the cases again")
    if report["labels"] is None and report["threshold"] is None:
        raise InputError(f"nothing to save: the human labels in {report['label_field']} and the verdicts of "
                         f"{report['scorer']} could not be compared (name the positive label with --positive)",
                         path=report["data"])
    store = app.open_store(db)
    return store.save_calibration(fingerprint=report["fingerprint"], scorer=report.get("qualified") or report["scorer"],
                                  data_path=report["data"], data_hash=report["data_hash"], run_id=report["run_id"],
                                  n=report["summary"]["n"], report=report)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _held(held: dict[str, Any] | None) -> str:
    if not held:
        return "held out: too few cases of one label for cross-validation"
    return f"held out ({held['method']}): accuracy {_fmt(held['accuracy'])}, kappa {_fmt(held['kappa'])}"


def _rule(best: dict[str, Any]) -> str:
    return f"value {'>=' if best['direction'] == '>=' else '<'} {best['threshold']:.4g}"


def render_text(report: dict[str, Any], show: int) -> str:
    from evalyard import table

    skipped = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in report["skipped"].items() if v)
    value = "" if report["value"] == "value" else f", on {report['value']}"
    lines = [f"{report['scorer']} vs {report['label_field']} (run {report['run_id']}{value}): {report['cases']} cases, "
             f"{report['compared']} compared" + (f" (skipped: {skipped})" if skipped else ""),
             f"human labels: {report['human_kind']} ("
             + ", ".join(f"{k} {v}" for k, v in (report["balance"] or {}).items()) + ")"]
    agreement = report["labels"]
    if agreement:
        lines.append(f"accuracy {_fmt(agreement['accuracy'])}   Cohen's kappa {_fmt(agreement['kappa'])}   "
                     f"(n={agreement['n']}, compared by {agreement['basis']})")
    correlation = report["correlation"]
    if correlation:
        lines.append(f"Spearman {_fmt(correlation['spearman'])}   Pearson {_fmt(correlation['pearson'])}   "
                     f"(n={correlation['n']})" + (f"   AUC {_fmt(report['auc'])}" if report["auc"] is not None else ""))
    best = report["threshold"]
    if best:
        text = (f"fitted threshold: {_rule(best)} -> accuracy {_fmt(best['accuracy'])}, kappa {_fmt(best['kappa'])} "
                f"on the cases it was fitted on; {_held(best['held_out'])}")
        if best["direction"] == "<=":
            text += " (the values run against the labels)"
        lines.append(text)
        if "scorer_threshold" in best:
            lines.append(f"at the scorer's own threshold {best['scorer_threshold']:g}: accuracy "
                         f"{_fmt(best['accuracy_at_scorer_threshold'])}, kappa {_fmt(best['kappa_at_scorer_threshold'])}")
    found = report.get("baselines")
    if found:
        rows = []
        for name, entry in found.items():
            rule = f"always {entry['predicts']}" if "predicts" in entry else _rule(entry)
            held = entry["held_out"] or {}
            rows.append([name, rule, _fmt(entry["accuracy"]), _fmt(held.get("accuracy")), _fmt(held.get("kappa"))])
        rows.append(["the judge", "", "", _fmt(report["judge_accuracy"]), ""])
        lines += ["", "baselines (no model; thresholds fitted and scored like the judge's)",
                  table(["predictor", "rule", "accuracy (fitted)", "accuracy (held out)", "kappa (held out)"], rows)]
        verdicts = report["baseline_verdicts"]
        lines += [f"WARNING: {v}" for v in verdicts] or ["no baseline matches the judge"]
    if agreement:
        labels = agreement["confusion"]["labels"]
        rows = [[f"human {label}"] + row for label, row in zip(labels, agreement["confusion"]["matrix"])]
        lines += ["", "confusion matrix (rows: human, columns: scorer)", table([""] + labels, rows)]
    disagreements = report["disagreements"]
    if disagreements:
        lines += ["", f"disagreements: {len(disagreements)}" + (f" (first {show})" if len(disagreements) > show else "")]
        rows = [[d["id"], d["human"], d["scorer"], _fmt(d["value"]), (d["reasoning"] or "no reasoning")[:70]]
                for d in disagreements[:show]]
        lines.append(table(["case", "human", "scorer", "value", "reasoning"], rows))
    if report.get("saved"):
        lines += ["", f"saved calibration {report['saved']} for {report['scorer']} (fingerprint {report['fingerprint']}): "
                      f"runs of this judge show its agreement; `threshold: calibrated` or `evalyard run --calibrated` "
                      f"uses the fitted threshold"]
    return "\n".join(lines)


@click.command("calibrate")
@click.argument("data", required=False, type=click.Path(exists=True, dir_okay=False))
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
@click.option("--value", "value", default="auto", show_default=True, metavar="SOURCE",
              help="What to fit the threshold on: value, details.KEY, or auto (the scorer's calibration value, such "
                   "as a judge's P(yes) kept in its details, else its value).")
@click.option("--baselines/--no-baselines", default=True, show_default=True,
              help="Also score the cases with no-model predictors (majority class, response length, word overlap "
                   "with the context/reference) and say when one matches or beats the judge.")
@click.option("--save", is_flag=True, help="Keep this calibration in the database under the judge's fingerprint: "
                                           "its runs show the agreement and can use the threshold.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option("--db", "db_url", envvar="EVALYARD_DB", metavar="URL", help="Database (default: evalyard.db in the "
                                                                        "data directory).")
def calibrate_command(data, run_ref, scorer, label_field, positive, judge_model, prompts_dirs, concurrency, show,
                      value, baselines, save, as_json, db_url):
    """How well a scorer agrees with human labels on DATA (or, without DATA, with the labels given
    to RUN's cases with `evalyard label`): accuracy, Cohen's kappa, Spearman and
    Pearson, AUC, a confusion matrix, the best threshold for a numeric scorer against binary labels
    (with its accuracy on held-out folds), no-model baselines, and the cases where they disagree.

    \b
    evalyard calibrate examples/calibrate.jsonl --scorer contains
    evalyard calibrate labelled.jsonl --run RUN_ID --scorer qa_correctness --json
    evalyard calibrate labelled.jsonl -s criteria/correctness:logprobs=true --save
    evalyard calibrate --run RUN_ID          (after `evalyard label RUN_ID`)
    """
    from evalyard import current_app, echo_json

    try:
        app = current_app()
        app.use_prompt_dirs(prompts_dirs)
        report = calibration(app, data, run_ref=run_ref, scorer=scorer, label_field=label_field, positive=positive,
                             judge_model=judge_model, db=db_url, concurrency=concurrency, value=value,
                             with_baselines=baselines)
        if save:
            report["saved"] = save_calibration(app, report, db_url)
    except click.UsageError as exc:  # one line and exit 2, like the core's bad-usage errors
        from evalyard import CLIError

        raise CLIError(exc.message) from None
    if as_json:
        echo_json(report)
    else:
        click.echo(render_text(report, show))
