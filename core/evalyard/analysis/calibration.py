"""Calibration: how well a scorer agrees with human labels (``calibration``, the figures of
``evalyard calibrate``, from ``agreement``), kept with ``--save``, and saved calibrations in
everyday runs: which judge of a run has one (matched by the scorer's
fingerprint: scorer, config, judge model, template hash), the line "agrees with people: ..."
shown beside its scores, and the fitted threshold a run uses when asked (``threshold:
calibrated`` or ``evalyard run --calibrated``).

``evalyard calibrate --save`` stores a calibration's ``report`` with a
``summary`` of these keys:

- ``n``, ``accuracy``, ``kappa``, ``basis``: agreement of the judge's own verdicts (its labels,
  or its values cut at its own threshold) with the human labels;
- ``at_threshold``: ``{rule, n, accuracy, accuracy_ci, kappa, kappa_ci}``, the same at the
  threshold a run uses without ``--calibrated`` (nothing fitted), with 95% bootstrap intervals,
  and ``scorer_threshold``, that threshold; ``points`` (``value``, ``positive``): each case's
  value and human side, so a run with another threshold gets its own figure;
- ``threshold``, ``direction``: the fitted cut (positive when value >= threshold; ``<``: positive
  when value < threshold, the judge's values run against the labels, and ``--calibrated``
  refuses it, saying so; ``<=`` in calibrations saved by earlier releases means the same ``<``);
- ``held_out``: ``{method, n, accuracy, accuracy_ci, kappa, kappa_ci}`` of the fitted cut on
  cases it was not fitted on (cross-validated): what a ``--calibrated`` run gets;
- ``value``: what the cut applies to: ``value``, ``calibration_value`` (``Scorer.calibration_value``)
  or ``details.KEY``;
- ``auc``, ``auc_ci`` (or None), ``best_baseline``, ``majority`` (the majority class's held-out
  accuracy), ``card`` (the judge card), ``data``, ``data_hash``, ``labels``.

A run records the calibration it showed (``calibration_used`` in its scorer description), so
``runs show`` and the report show that one later, not whichever is newest.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import InputError
from ..scoring import Score, Scorer
from ..suite import CALIBRATED


def is_judge(spec: dict[str, Any]) -> bool:
    """Whether a run's scorer description is a judge: some part of its fingerprint names a model
    and the prompt template it asks it with (the judge service records both). An embedding
    scorer names a model too, but asks it nothing: it is no judge."""
    def asks_a_model(data: Any) -> bool:
        if isinstance(data, dict):
            return (bool(data.get("model")) and bool(data.get("template_hash"))) or any(
                asks_a_model(v) for v in data.values())
        return False

    return asks_a_model(spec.get("fingerprint_data"))


def source_value(scorer: Scorer, score: Score, source: str) -> float | None:
    """The number a calibration was fitted on, for one score."""
    if score.error is not None:
        return None
    if source == "calibration_value":
        return scorer.calibration_value(score)
    if source.startswith("details."):
        return details_number(score.details or {}, source[len("details."):])
    return score.value


def details_number(details: Any, path: str) -> float | None:
    """The number at a dotted path into a score's details (``claims.0.p_yes``: list items by index)."""
    found: Any = details
    for part in path.split("."):
        if isinstance(found, dict):
            found = found.get(part)
        elif isinstance(found, list) and part.isdigit() and int(part) < len(found):
            found = found[int(part)]
        else:
            return None
    return float(found) if isinstance(found, (int, float)) and not isinstance(found, bool) else None


def summary_of(row: Any) -> dict[str, Any]:
    summary = dict((row.report or {}).get("summary") or {})
    summary.update(id=row.id, created_at=row.created_at.isoformat(timespec="seconds") if row.created_at else None)
    return summary


def apply_calibration(p: Any, row: Any, every_judge: bool = False) -> str | None:
    """Record on a prepared scorer the saved calibration ``row`` (None: none matches its
    fingerprint) its figures come from; give it the fitted threshold when it asked for ``threshold:
    calibrated`` (any judge with ``every_judge``). Returns the warning to show, if any (a threshold
    refused, or one no better than the majority-class baseline)."""
    asked = p.spec.threshold == CALIBRATED
    where = p.spec.origin or "scorer"
    if row is None:
        if asked:
            raise InputError(f"{where}: scorer {p.name!r} asks for threshold: calibrated, but no saved calibration "
                             f"matches its fingerprint (scorer, config, judge model, template): run `evalyard "
                             f"calibrate DATA --scorer {p.name} --save` with the same options first")
        return None
    summary = summary_of(row)
    p.calibration_used = {"id": row.id, "created_at": summary.get("created_at")}
    if not (asked or every_judge):
        return None
    if summary.get("threshold") is None or summary.get("direction") != ">=":
        reason = (f"its values run against the human labels (positive when value < {summary['threshold']:.4g}), "
                  f"and a scorer passes on high values" if summary.get("direction") in ("<", "<=")
                  else "it has no fitted threshold")
        if asked:
            raise InputError(f"{where}: the saved calibration {row.id} of {p.name!r} cannot give a threshold: "
                             f"{reason}")
        p.calibration_used["refused"] = reason
        return (f"{p.name}: --calibrated: calibration {row.id} NOT applied: {reason}; the scorer keeps "
                f"its threshold {p.threshold}")
    p.spec.threshold = summary["threshold"]
    p.calibration = {"id": row.id, "threshold": summary["threshold"], "value": summary.get("value", "value")}
    held, majority = summary.get("held_out") or {}, summary.get("majority")
    if held.get("accuracy") is not None and majority is not None and held["accuracy"] < majority:
        return (f"{p.name}: --calibrated applies threshold {summary['threshold']:.4g} (calibration "
                f"{row.id}) whose held-out accuracy {held['accuracy']:.2f} is below the majority-class "
                f"baseline's {majority:.2f}: always answering the commoner label does better")
    return None


def _figure_at(points: dict[str, Any], threshold: float, higher_is_better: bool) -> dict[str, Any]:
    """Agreement of the saved values cut at ``threshold`` as a run cuts them."""
    from .agreement import figures

    values, positive = points["value"], points["positive"]
    guesses = [(v >= threshold) if higher_is_better else (v > threshold) for v in values]
    rule = f"value {'>=' if higher_is_better else '>'} {threshold:g}"
    return {"rule": rule, **figures([str(p) for p in positive], [str(g) for g in guesses])}


def _ci(interval: Any) -> str:
    return f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else ""


def figure_text(found: dict[str, Any]) -> str:
    """``accuracy 0.67 [0.46, 0.83], kappa 0.33 [-0.08, 0.67]``: a figure with its intervals."""
    return (f"accuracy {_num(found.get('accuracy'))}{_ci(found.get('accuracy_ci'))}, "
            f"kappa {_num(found.get('kappa'))}{_ci(found.get('kappa_ci'))}")


def agreement(spec: dict[str, Any], row: Any, newest: bool = False) -> dict[str, Any] | None:
    """What a run shows about one scorer's agreement with people: the figures of the saved
    calibration ``row`` the run used (any scorer can be calibrated: ``contains`` against human
    labels as well as a judge), at the threshold the run used: the fitted one held out when it
    applied it, else its own threshold (nothing fitted); ``{"status": "uncalibrated"}`` for a
    judge without one (``row`` None); None for any other scorer without one. ``newest``: ``row``
    is the newest of the fingerprint, the run recorded none."""
    applied, used = spec.get("calibration"), spec.get("calibration_used")
    if row is None:
        if not is_judge(spec):
            return None
        return {"status": "uncalibrated", "line": "uncalibrated (no saved calibration: evalyard calibrate DATA "
                                                  "--scorer NAME --save)"}
    summary = summary_of(row)
    held = summary.get("held_out") or {}
    warnings = []
    if used and used.get("refused"):
        warnings.append(f"--calibrated: calibration {row.id} NOT applied: {used['refused']}")
    if applied and held:
        figure = {"rule": f"the calibrated threshold {_rule_text(summary)} on {summary.get('value', 'value')}, "
                          f"{held.get('method')}", **held}
    else:
        figure = _uncalibrated_figure(summary, spec)
    no_cut = figure is None
    figure = figure or {"rule": "no threshold: this run cuts nowhere"}
    out = {"status": "calibrated", "calibration_id": row.id, "no_cut": no_cut, "n": figure.get("n") or summary.get("n"),
           "accuracy": figure.get("accuracy"), "accuracy_ci": figure.get("accuracy_ci"), "kappa": figure.get("kappa"),
           "kappa_ci": figure.get("kappa_ci"), "basis": figure.get("rule"), "threshold_applied": bool(applied),
           "fitted_threshold": summary.get("threshold"), "direction": summary.get("direction"),
           "held_out": summary.get("held_out"), "data": summary.get("data"), "created_at": summary.get("created_at"),
           "newest_not_recorded": newest, "card": summary.get("card"), "value": summary.get("value", "value")}
    best, majority = summary.get("best_baseline"), summary.get("majority")
    if best and out["accuracy"] is not None and best["accuracy"] >= out["accuracy"] - 1e-9:
        warnings.append(f"no better than a no-model baseline: {best['name']} gets accuracy {best['accuracy']:.2f}"
                        f"{_ci(best.get('accuracy_ci'))} held out, this judge {out['accuracy']:.2f}")
    if applied and majority is not None and out["accuracy"] is not None and out["accuracy"] < majority:
        warnings.append(f"the calibrated threshold's held-out accuracy is below the majority-class baseline's "
                        f"({majority:.2f})")
    out["warnings"] = warnings
    out["line"] = agreement_line(out)
    out["lines"] = [out["line"], *([card_line(out["card"])] if out["card"] else []),
                    *(f"WARNING: {w}" for w in warnings)]
    return out


def _rule_text(summary: dict[str, Any]) -> str:
    return f"value {'>=' if summary.get('direction') == '>=' else '<'} {summary['threshold']:.4g}"


def _uncalibrated_figure(summary: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any] | None:
    """The agreement at the threshold a run used without the calibrated one; None when the run cut
    nowhere (a scorer with no threshold of its own, none given, and no labels to compare): it gave
    no verdict to agree or disagree, and a figure at a fitted cut would be one it did not apply."""
    threshold = spec.get("threshold")
    numeric = isinstance(threshold, (int, float)) and not isinstance(threshold, bool)
    found = summary.get("at_threshold")
    if numeric and threshold != summary.get("scorer_threshold") and summary.get("points"):
        return _figure_at(summary["points"], threshold, spec.get("higher_is_better", True))
    if found is not None:
        return found
    if not numeric:
        return None
    # saved before figures were kept per threshold
    return {"rule": summary.get("basis"), "n": summary.get("n"), "accuracy": summary.get("accuracy"),
            "kappa": summary.get("kappa")}


def _num(value: Any) -> str:
    return "-" if value is None else f"{value:.2f}"


def agreement_line(view: dict[str, Any]) -> str:
    """The line a run shows beside a judge's scores: its agreement at the threshold the run used,
    with intervals, n, and which calibration it comes from."""
    source = (f"(calibration {view['calibration_id']}, {(view.get('created_at') or '?')[:10]}, "
              f"{os.path.basename(view.get('data') or '?')}"
              + (", the newest: this run recorded none" if view.get("newest_not_recorded") else "") + ")")
    if view.get("no_cut"):
        text = (f"agrees with people: no figure for this run: the scorer has no threshold of its own and the run "
                f"gives none, so it passes or fails nothing {source}")
    else:
        text = f"agrees with people: {figure_text(view)} on {view.get('n')} labelled cases at {view.get('basis')} {source}"
    held = view.get("held_out") or {}
    if view.get("threshold_applied") and view.get("value", "value") != "value":
        text += (f"; pass/fail uses the calibrated threshold on {view['value']}, while the mean and corpus figures "
                 f"are of the value")
    elif not view.get("threshold_applied") and view.get("fitted_threshold") is not None and held:
        if view.get("direction") == ">=":
            text += (f"; its calibrated threshold {view['fitted_threshold']:.4g} on {view.get('value', 'value')} "
                     f"gets {figure_text(held)} on {held.get('n')} cases held out ({held.get('method')}; threshold: "
                     f"calibrated, or run --calibrated)")
        else:
            text += (f"; its fitted threshold runs against the labels (positive when value < "
                     f"{view['fitted_threshold']:.4g}): --calibrated does not apply it")
    return text


def card_line(card: dict[str, Any]) -> str:
    """The judge card in one line (``card`` below)."""
    parts = []
    if card.get("auc") is not None:
        parts.append(f"AUC {card['auc']:.2f}{_ci(card.get('auc_ci'))}")
    else:
        parts.append("AUC n/a (no graded value)")
    best = card.get("best_baseline")
    parts.append(f"best no-model baseline {best['name']} {best['accuracy']:.2f}{_ci(best.get('accuracy_ci'))}"
                 if best else "best no-model baseline n/a")
    sc = card.get("self_consistency")
    parts.append(f"self-consistency {sc:.2f}" if sc is not None else
                 f"self-consistency n/a ({card.get('self_consistency_note')})")
    pc = card.get("position_consistency")
    if pc is not None:
        parts.append(f"position consistency {pc:.2f}{_ci(card.get('position_consistency_ci'))}")
    return "judge card: " + "; ".join(parts)


# -- calibrating a scorer against human labels ---------------------------------------

DEFAULT_LABEL = "metadata.human_label"
SHOWN_DISAGREEMENTS = 10


def label_of(case: Any, field: str) -> Any:
    """A case's human label in ``field`` (``metadata.KEY``, a text field, or a column kept in metadata)."""
    if field.startswith("metadata."):
        return case.metadata.get(field[len("metadata."):])
    if field in ("input", "candidate", "reference"):
        return getattr(case, field)
    return case.metadata.get(field)  # a column the loader kept in metadata


def value_source(scorer: Any, asked: str) -> str:
    """``auto``: the scorer's ``calibration_value`` when it defines one, else its value."""
    if asked != "auto":
        return asked
    if scorer is not None and type(scorer).calibration_value is not Scorer.calibration_value:
        return "calibration_value"
    return "value"


def human_labels(labelled: list[Any], label_field: str, data: str | None) -> dict[str, Any]:
    """Each case's human label by id; refused when no case has one (before anything is scored)."""
    labels = {c.id: label_of(c, label_field) for c in labelled}
    if all(v is None or v == "" for v in labels.values()):
        raise InputError(f"no case carries a human label in {label_field} (choose the field with --label)",
                         path=data)
    return labels


def calibration_report(labelled: list[Any], results: dict[str, Any], scored_cases: dict[str, Any],
                       entry: dict[str, Any], instance: Any, source: str, *, run_id: str, data: str,
                       data_hash: str, label_field: str, positive: str | None,
                       with_baselines: bool = True) -> dict[str, Any]:
    """``evalyard calibrate``'s report: the human labels of the ``labelled`` cases (in
    ``label_field``) against one scorer's stored ``results`` (rows by case id) in a run whose cases
    are ``scored_cases``; ``instance`` is the scorer (None when it is no longer installed) and
    ``source`` what number to fit on (``value_source``)."""
    from .agreement import Pair, agreement_report

    labels = human_labels(labelled, label_field, data)
    data_format = "claims" if any(_claims_of(c) for c in labelled) else "answers"
    missing: list[str] = []
    pairs, skipped = [], {"no_human_label": 0, "no_result": 0, "scorer_error": 0, "no_verdict": 0}
    for case in labelled:
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
            if number is None and source.startswith("details.") and row.value is not None:
                missing.append(case.id)
            if number is None and row.label is None:
                skipped["no_verdict"] += 1
                continue
            scored = scored_cases.get(case.id, case)
            text, sources = baseline_texts(scored, data_format)
            pairs.append(Pair(case.id, human, number, row.label, row.details or {}, run_value=row.value,
                              candidate=text, sources=sources))
    if missing and len(missing) == len(pairs) + skipped["no_verdict"]:
        raise InputError(f"--value {source}: no number there in any result of {entry['name']} (first case "
                         f"{missing[0]!r}); see a result's details with `evalyard runs show {run_id} --json`")
    if not pairs:
        raise InputError(f"no case has both a human label and a verdict of {entry['name']} in run {run_id} "
                         f"(skipped: {', '.join(f'{k}={v}' for k, v in skipped.items() if v)})", path=data)
    report = agreement_report(pairs, higher_is_better=entry.get("higher_is_better", True),
                              scorer_threshold=_number_or_none(entry.get("threshold")), positive=positive,
                              with_baselines=with_baselines, scorer_labels=entry.get("labels") or (),
                              data_format=data_format)
    out = {"data": data, "data_hash": data_hash, "label_field": label_field, "positive": positive,
           "run_id": run_id, "scorer": entry["name"], "qualified": entry.get("qualified"),
           "fingerprint": entry.get("fingerprint"), "fingerprint_data": entry.get("fingerprint_data"),
           "value": source, "scorer_threshold": _number_or_none(entry.get("threshold")), "cases": len(labelled),
           "skipped": skipped, **report}
    out["card"] = judge_card(out, pairs)
    out["summary"] = summary(out)
    return out


def _claims_of(case: Any) -> list[str]:
    """The claims of a case in Trust-Score's format (``metadata.answers``: lists of claim sentences)."""
    answers = (case.metadata or {}).get("answers")
    if not isinstance(answers, list):
        return []
    return [c for group in answers if isinstance(group, list) for c in group if isinstance(c, str)]


def baseline_texts(case: Any, data_format: str) -> tuple[str | None, str | None]:
    """What the no-model baselines compare: the response and its context/reference, or, for claims,
    the claims and the evidence they are checked against (the response and its context)."""
    if data_format == "claims":
        evidence = "\n".join([case.candidate or "", *(case.context or [])]).strip()
        return " ".join(_claims_of(case)) or None, evidence or None
    sources = "\n".join([*(case.context or []), case.reference or ""]).strip()
    return case.candidate, sources or None


def _number_or_none(value: Any) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def summary(report: dict[str, Any]) -> dict[str, Any]:
    """What a run shows of a saved calibration (the keys this module's docstring lists)."""
    labels = report["labels"] or {}
    best = report["threshold"] or {}
    majority = ((report.get("baselines") or {}).get("majority class") or {}).get("held_out") or {}
    return {"n": labels.get("n", report["compared"]), "accuracy": labels.get("accuracy"),
            "kappa": labels.get("kappa"), "basis": labels.get("basis"), "threshold": best.get("threshold"),
            "direction": best.get("direction"), "held_out": best.get("held_out"), "value": report["value"],
            "at_threshold": report.get("at_threshold"), "scorer_threshold": report.get("scorer_threshold"),
            "points": report.get("points"), "auc": report["auc"], "auc_ci": report.get("auc_ci"),
            "best_baseline": report.get("best_baseline"), "majority": majority.get("accuracy"),
            "card": report.get("card"), "data": report["data"], "data_hash": report["data_hash"],
            "labels": report["label_field"], "positive": report["positive"], "balance": report["balance"]}


#: Where a judge's identity sits in its fingerprint data (model and template), for the card.
def _identity(data: Any, keys: tuple[str, ...]) -> Any:
    if isinstance(data, dict):
        for key in keys:
            if data.get(key):
                return data[key]
        for value in data.values():
            found = _identity(value, keys)
            if found:
                return found
    return None


def judge_card(report: dict[str, Any], pairs: list[Any]) -> dict[str, Any]:
    """The judge card of issue 35: for one (scorer, options, model, template), its agreement at the
    threshold a run uses and with the calibrated threshold held out, AUC, the best no-model
    baseline fitted the same way, self-consistency (the mean share of a case's sampled verdicts
    that agree with its majority, when the judge was sampled more than once: ``samples=N`` with a
    temperature) and, for pairwise judges, position consistency (both orders name the same winner)."""
    data = report.get("fingerprint_data") or {}
    agreeing = [p.details["agreement"] for p in pairs
                if isinstance(p.details.get("agreement"), (int, float)) and not isinstance(p.details["agreement"], bool)]
    pairwise = report.get("pairwise") or {}
    at = report.get("at_threshold") or {}
    return {"scorer": report.get("qualified") or report["scorer"], "options": (data.get("config")
            if isinstance(data, dict) else None), "model": _identity(data, ("model", "judge_model")),
            "template": _identity(data, ("template_hash", "template")), "fingerprint": report.get("fingerprint"),
            "n": at.get("n") or report["compared"], "rule": at.get("rule"), "accuracy": at.get("accuracy"),
            "accuracy_ci": at.get("accuracy_ci"), "kappa": at.get("kappa"), "kappa_ci": at.get("kappa_ci"),
            "held_out": (report.get("threshold") or {}).get("held_out"), "auc": report.get("auc"),
            "auc_ci": report.get("auc_ci"), "best_baseline": report.get("best_baseline"),
            "self_consistency": sum(agreeing) / len(agreeing) if agreeing and not pairwise else None,
            "self_consistency_note": None if agreeing and not pairwise else
            "one verdict per case: sample it with samples=N and a temperature, where the provider allows",
            "position_consistency": pairwise.get("position_consistency"),
            "position_consistency_ci": pairwise.get("position_consistency_ci")}


def check_savable(report: dict[str, Any]) -> None:
    """Refuse to save a calibration a run could not use (no fingerprint to match, nothing compared)."""
    if not report.get("fingerprint"):
        raise InputError(f"run {report['run_id']} stored no fingerprint for {report['scorer']} (a run made before "
                         f"fingerprints): calibrate with --scorer to score the cases again")
    if report["labels"] is None and report["threshold"] is None:
        raise InputError(f"nothing to save: the human labels in {report['label_field']} and the verdicts of "
                         f"{report['scorer']} could not be compared (name the positive label with --positive)",
                         path=report["data"])
