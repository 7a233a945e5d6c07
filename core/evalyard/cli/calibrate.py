"""``evalyard calibrate``: how well a scorer agrees with human labels.

Input: a data file (or suite) whose cases carry a human label (``metadata.human_label`` by
default, or any metadata key / column with ``--label``), and either an existing run
(``--run``) or a scorer to run now (``--scorer``). Cases are matched by id.
"""

from __future__ import annotations

from typing import Any

import click

from ..analysis.calibration import DEFAULT_LABEL, SHOWN_DISAGREEMENTS, card_line
from ..figures.calibrations import save_calibration
from ..services import calibration
from .options import current_app, echo_json, table


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _ci(interval: Any) -> str:
    return f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else ""


def _figure(found: dict[str, Any]) -> str:
    return (f"accuracy {_fmt(found['accuracy'])}{_ci(found.get('accuracy_ci'))}, kappa {_fmt(found['kappa'])}"
            f"{_ci(found.get('kappa_ci'))}")


def _held(held: dict[str, Any] | None) -> str:
    if not held:
        return "held out: too few cases of one label for cross-validation"
    return f"held out ({held['method']}): {_figure(held)}"


def _rule(best: dict[str, Any]) -> str:
    return f"value {'>=' if best['direction'] == '>=' else '<'} {best['threshold']:.4g}"


def _confusion(agreement: dict[str, Any], used: set[str]) -> str:
    """The confusion matrix without rows for labels no person used (a judge's extra labels stay columns)."""
    labels = agreement["confusion"]["labels"]
    rows = [[f"human {label}"] + row for label, row in zip(labels, agreement["confusion"]["matrix"])
            if label in used or any(row)]
    return table([""] + labels, rows)


def render_text(report: dict[str, Any], show: int) -> str:
    skipped = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in report["skipped"].items() if v)
    value = "" if report["value"] == "value" else f", on {report['value']}"
    lines = [f"{report['scorer']} vs {report['label_field']} (run {report['run_id']}{value}): {report['cases']} cases, "
             f"{report['compared']} compared" + (f" (skipped: {skipped})" if skipped else ""),
             f"human labels: {report['human_kind']} ("
             + ", ".join(f"{k} {v}" for k, v in (report["balance"] or {}).items()) + ")"
             + (f", positive: {report['positive_label']}" if report.get("positive_label") else "")]
    at = report.get("at_threshold")
    if at:
        lines.append(f"as a run uses it ({at['rule']}, nothing fitted): {_figure(at)}   (n={at['n']}, 95% bootstrap "
                     f"intervals)")
    agreement = report["labels"]
    if agreement and (not at or agreement["basis"] not in (at["rule"], "labels")):
        lines.append(f"accuracy {_fmt(agreement['accuracy'])}{_ci(agreement.get('accuracy_ci'))}   Cohen's kappa "
                     f"{_fmt(agreement['kappa'])}{_ci(agreement.get('kappa_ci'))}   (n={agreement['n']}, compared by "
                     f"{agreement['basis']})")
    pairwise = report.get("pairwise")
    if pairwise:
        lines.append(f"pairwise: picked a side in {pairwise['decided']} of {pairwise['n']} pairs (ties or position-bound "
                     f"splits {pairwise['ties_or_splits']}, counted as misses); position consistency "
                     f"{_fmt(pairwise['position_consistency'])}{_ci(pairwise.get('position_consistency_ci'))} (both "
                     f"orders named the same winner)")
    correlation = report["correlation"]
    if correlation:
        lines.append(f"Spearman {_fmt(correlation['spearman'])}   Pearson {_fmt(correlation['pearson'])}   "
                     f"(n={correlation['n']})" + (f"   AUC {_fmt(report['auc'])}{_ci(report.get('auc_ci'))}"
                                                  if report["auc"] is not None else ""))
    best = report["threshold"]
    if best:
        text = (f"calibrated threshold {_rule(best)}: {_held(best['held_out'])}; on the cases it was fitted on "
                f"(optimistic): accuracy {_fmt(best['accuracy'])}")
        if best["direction"] in ("<", "<="):  # "<=": a calibration saved by an earlier release
            text += " (the values run against the labels: --calibrated refuses this threshold)"
        lines.append(text)
        if "scorer_threshold" in best and not at:
            lines.append(f"at the scorer's own threshold {best['scorer_threshold']:g}: accuracy "
                         f"{_fmt(best['accuracy_at_scorer_threshold'])}, kappa {_fmt(best['kappa_at_scorer_threshold'])}")
    lines += [f"note: {n}" for n in report.get("notes") or []]
    found = report.get("baselines")
    if found:
        rows = []
        for name, entry in found.items():
            rule = f"always {entry['predicts']}" if "predicts" in entry else _rule(entry)
            held = entry["held_out"] or {}
            rows.append([name, rule, _fmt(entry["accuracy"]), _fmt(held.get("accuracy")) + _ci(held.get("accuracy_ci")),
                         _fmt(held.get("kappa"))])
        judge = report.get("judge_figure") or {}
        rows.append(["the judge", judge.get("basis") or "", "",
                     _fmt(judge.get("accuracy")) + _ci(judge.get("accuracy_ci")), _fmt(judge.get("kappa"))])
        lines += ["", "baselines (no model; thresholds fitted and scored like the judge's)",
                  table(["predictor", "rule", "accuracy (fitted)", "accuracy (held out)", "kappa (held out)"], rows)]
        verdicts = report["baseline_verdicts"]
        lines += [f"WARNING: {v}" for v in verdicts] or ["no baseline matches the judge"]
        best_base = report.get("best_baseline")
        if at and best_base and at["accuracy"] is not None and at["accuracy"] <= best_base["accuracy"] + 1e-9 \
                and not verdicts:
            lines.append(f"WARNING: as a run uses it (accuracy {at['accuracy']:.3f}) the judge is no better than "
                         f"{best_base['name']} ({best_base['accuracy']:.3f} held out); only its calibrated threshold is")
        majority = (found.get("majority class") or {}).get("held_out") or {}
        held = (best or {}).get("held_out") or {}
        if best and best["direction"] == ">=" and held and majority and held["accuracy"] < majority["accuracy"]:
            lines.append(f"WARNING: the calibrated threshold's held-out accuracy {held['accuracy']:.3f} is below the "
                         f"majority class's {majority['accuracy']:.3f}: do not use it (--calibrated warns)")
    if report.get("card"):
        lines += ["", card_line(report["card"])]
    if agreement:
        lines += ["", "confusion matrix (rows: human, columns: scorer)",
                  _confusion(agreement, {str(k) for k in (report["balance"] or {})})]
    disagreements = report["disagreements"]
    if disagreements:
        if show:
            lines += ["", f"disagreements: {len(disagreements)}" + (f" (first {show})" if len(disagreements) > show else "")]
            rows = [[d["id"], d["human"], d["scorer"], _fmt(d["value"]), (d["reasoning"] or "no reasoning")[:70]]
                    for d in disagreements[:show]]
            lines.append(table(["case", "human", "scorer", "value", "reasoning"], rows))
        else:
            lines += ["", f"disagreements: {len(disagreements)} (--show N lists them)"]
    if report.get("saved"):
        lines += ["", f"saved calibration {report['saved']} for {report['scorer']} (fingerprint {report['fingerprint']}): "
                      f"runs of this scorer show its agreement; `threshold: calibrated` or `evalyard run --calibrated` "
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
@click.option("--concurrency", "-j", default=4, show_default=True, type=click.IntRange(1, 1024),
              help="Model requests in flight when --scorer runs on DATA.")
@click.option("--show", default=SHOWN_DISAGREEMENTS, show_default=True, type=click.IntRange(0),
              help="How many disagreeing cases to print (all of them are in --json).")
@click.option("--value", "value", default="auto", show_default=True, metavar="SOURCE",
              help="What to fit the threshold on: value, details.KEY, or auto (the scorer's calibration value, such "
                   "as a judge's P(yes) kept in its details, else its value).")
@click.option("--baselines/--no-baselines", default=True, show_default=True,
              help="Also score the cases with no-model predictors (majority class, response length, word overlap "
                   "with the context/reference) and say when one matches or beats the judge.")
@click.option("--reviews", is_flag=True, help="With --run of a pairwise judge's run (`compare BASE NEW --judge`) and "
                                              "no DATA: the people's blind reviews of BASE and NEW (`evalyard "
                                              "review`) are its labels (per case: candidate when NEW was preferred, "
                                              "reference when BASE was, equal otherwise).")
@click.option("--save", is_flag=True, help="Keep this calibration in the database under the judge's fingerprint: "
                                           "its runs show the agreement and can use the threshold.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option("--db", "db_url", envvar="EVALYARD_DB", metavar="URL", help="Database (default: evalyard.db in the "
                                                                        "data directory).")
def calibrate_command(data, run_ref, scorer, label_field, positive, judge_model, prompts_dirs, concurrency, show,
                      value, baselines, reviews, save, as_json, db_url):
    """How well a scorer agrees with human labels on DATA (or, without DATA, with the labels given
    to RUN's cases with `evalyard label`): accuracy and Cohen's kappa at the threshold a run uses,
    Spearman and Pearson, AUC, a confusion matrix, the best threshold for a numeric scorer against
    binary labels (with its accuracy on held-out folds), no-model baselines, the judge card, and
    the cases where they disagree; 95% bootstrap intervals throughout.

    \b
    evalyard calibrate examples/calibrate.jsonl --scorer contains
    evalyard calibrate labelled.jsonl --run RUN_ID --scorer qa_correctness --json
    evalyard calibrate labelled.jsonl -s criteria/correctness:logprobs=true --save
    evalyard calibrate --run RUN_ID          (after `evalyard label RUN_ID`)
    evalyard calibrate --run PAIRWISE_RUN --reviews   (after `evalyard review BASE NEW`)
    """
    app = current_app()
    app.use_prompt_dirs(prompts_dirs)
    report = calibration(app, data, run_ref=run_ref, scorer=scorer, label_field=label_field, positive=positive,
                         judge_model=judge_model, db=db_url, concurrency=concurrency, value=value,
                         with_baselines=baselines, reviews=reviews)
    if save:
        report["saved"] = save_calibration(app.open_store(db_url), report)
    if as_json:
        echo_json(report)
    else:
        click.echo(render_text(report, show))


def register(cli: click.Group) -> None:
    cli.add_command(calibrate_command)
