"""A/B of two runs with a pairwise judge: ``evalyard compare BASE NEW --judge pairwise``.

The cases both runs answered become a run of their own: each case's candidate is NEW's
response and its reference BASE's, scored by a pairwise judge that sees both orders (value 1:
NEW won both, 0.5: a tie or a split, 0: BASE won both; ``details.verdicts`` hold each order's
winner). Being a run, it is stored, cached and resumable like any judged run, and found again
by the same (BASE, NEW, judge fingerprint) instead of judged twice (``services.pairwise_run``).

From its results:

- the **win rate** of NEW over BASE by the judge's verdicts (NEW won 1, a tie or a split 0.5, BASE
  won 0: ties count half) with a bootstrap interval over cases; beside it the mean of the judge's
  values (``mean_preference``: a logprobs judge's mean debiased P(NEW better));
- the share of cases whose two orders disagree (**position-inconsistent**);
- the **length-controlled win rate**, as alpaca-eval 2 computes it: a logistic regression of each
  verdict (NEW won 1, tie 0.5, BASE won 0) on tanh(length difference / its standard deviation)
  and on which response came first, read at zero length difference and no position (its
  intercept). The coefficients have Gaussian priors (a ridge penalty): the intercept's is mild
  (sd 1 on the log-odds), the length slope's wide, so when length explains every verdict
  (the judge always picks the longer answer) the win rate at equal length falls back towards
  0.5 instead of being decided by which answer happened to be longer;
- the share of decisive verdicts that went to the **longer** response.

With no decisive verdict, the length-controlled rate cannot be estimated (the regression would
return its prior's 0.5) and is None with ``length_controlled_note`` saying why; neither is an
interval of zero width printed.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

from ..errors import InputError
from ..scoring import Case
from ..suite import Suite
from .agreement import orders_disagree
from .stats import bootstrap, bootstrap_ci, wilson_ci

#: Prior precisions (1 / variance) of the intercept, the length slope and the position slope.
PRIOR_PRECISION = (1.0, 0.01, 1.0)
LC_BOOTSTRAP_SAMPLES = 500


def pairwise_suite(base: Any, new: Any, base_cases: Iterable[Case], new_cases: Iterable[Case]) -> Suite:
    """The cases both runs have a response for: NEW's response as candidate, BASE's as reference."""
    by_id = {c.id: c for c in base_cases}
    cases = []
    for case in new_cases:
        other = by_id.get(case.id)
        if other is None or other.candidate is None or case.candidate is None:
            continue
        metadata = {"reference": case.reference} if case.reference is not None else {}
        cases.append(Case(id=case.id, input=case.input, candidate=case.candidate, reference=other.candidate,
                          context=list(case.context), metadata=metadata))
    if not cases:
        raise InputError(f"runs {base.id} and {new.id} share no case with a response in both")
    return Suite(name=f"pairwise {base.id} vs {new.id}", cases=cases,
                 source=f"evalyard compare {base.id} {new.id} --judge")


def _sigmoid(x: Any) -> Any:
    import numpy as np

    return 1.0 / (1.0 + np.exp(-x))


def fit_preference(length_feature: Any, position: Any, outcome: Any) -> Any:
    """MAP logistic regression (Newton's method) of ``outcome`` (0..1) on the two features;
    returns (intercept, length slope, position slope)."""
    import numpy as np

    X = np.column_stack([np.ones(len(outcome)), length_feature, position])
    prior = np.diag(PRIOR_PRECISION)
    beta = np.zeros(3)
    for _ in range(100):
        p = _sigmoid(X @ beta)
        gradient = X.T @ (outcome - p) - prior @ beta
        hessian = (X * (p * (1 - p))[:, None]).T @ X + prior
        step = np.linalg.solve(hessian, gradient)
        beta = beta + step
        if np.abs(step).max() < 1e-9:
            break
    return beta


def judgements(cases: dict[str, Case], results: Iterable[Any]) -> tuple[list[dict[str, Any]], int]:
    """One record per case (its value, each order's winner, both lengths) from a pairwise run's
    cases (by id) and result rows, and the number of errors."""
    records, errors = [], 0
    for row in results:
        if row.error is not None or row.value is None:
            errors += 1
            continue
        case = cases[row.case_id]
        orders = [(v.get("order"), v.get("winner")) for v in (row.details or {}).get("verdicts", [])]
        records.append({"case_id": row.case_id, "value": row.value, "label": row.label, "orders": orders,
                        "new_length": len(case.candidate or ""), "base_length": len(case.reference or "")})
    return records, errors


#: A case's verdict as a win share of NEW, by the judge's label (ties and splits count half).
LABEL_OUTCOME = {"candidate": 1.0, "reference": 0.0, "equal": 0.5, "inconsistent": 0.5}


def outcome(record: dict[str, Any]) -> float:
    """NEW won 1, a tie or a split 0.5, BASE won 0: by the judge's label, which for a
    position-debiased judge (logprobs) is a tie when its mean P(NEW better) is within its margin;
    a record without a known label by its value's side of 0.5."""
    found = LABEL_OUTCOME.get(record.get("label"))
    if found is not None:
        return found
    value = record["value"]
    return 1.0 if value > 0.5 else 0.0 if value < 0.5 else 0.5


def pairwise_stats(run_id: str, scorer: str, records: list[dict[str, Any]], errors: int) -> dict[str, Any]:
    """Win rate, its bootstrap interval, position inconsistency, the length-controlled win rate and
    the share of decisive verdicts that went to the longer response, from a pairwise run's
    ``judgements``. ``mean_preference`` is the mean of the judge's values (for a logprobs judge,
    its mean debiased P(NEW better)): beside the win rate, not instead of it."""
    import numpy as np

    out: dict[str, Any] = {"run_id": run_id, "judge": scorer, "cases": len(records), "errors": errors,
                           "win_rate": None, "ci95": None, "wins": 0, "losses": 0, "ties": 0,
                           "mean_preference": None, "position_inconsistent": None,
                           "length_controlled_win_rate": None, "length_controlled_ci95": None,
                           "length_controlled_note": None, "decisive": 0, "longer_won": None,
                           "length_explains_all": None}
    if not records:
        return out
    outcomes = [outcome(r) for r in records]
    out["win_rate"] = sum(outcomes) / len(outcomes)
    if len(set(outcomes)) == 1:  # one outcome for every case (all ties, say): no bootstrap spread
        ci = wilson_ci(sum(outcomes), len(outcomes))
        out["ci_method"] = "wilson"
    else:  # resampling cases
        ci = bootstrap_ci(outcomes)
        out["ci_method"] = "bootstrap"
    out["ci95"] = list(ci) if ci else None
    out["mean_preference"] = sum(r["value"] for r in records) / len(records)
    out["wins"] = outcomes.count(1.0)
    out["losses"] = outcomes.count(0.0)
    out["ties"] = len(outcomes) - out["wins"] - out["losses"]
    out["position_inconsistent"] = sum(1 for r in records if orders_disagree([w for _, w in r["orders"]])) / len(records)
    out["mean_length"] = {"base": sum(r["base_length"] for r in records) / len(records),
                          "new": sum(r["new_length"] for r in records) / len(records)}

    # One observation per order: NEW won 1, tie 0.5, BASE won 0. A case the judge called a tie
    # counts as a tie in both orders: a debiased judge's words in one order (which position it
    # named) are the position pull its tie already averaged out, not a verdict.
    case_index, difference, position, observed = [], [], [], []
    longer_won = decisive_with_longer = 0
    for i, r in enumerate(records):
        delta = r["new_length"] - r["base_length"]
        for order, winner in r["orders"]:
            y = 0.5 if r.get("label") == "equal" else {"candidate": 1.0, "reference": 0.0}.get(winner, 0.5)
            case_index.append(i)
            difference.append(delta)
            position.append(1.0 if order == "candidate_first" else -1.0)
            observed.append(y)
            out["decisive"] += y != 0.5
            if y != 0.5 and delta != 0:
                decisive_with_longer += 1
                longer_won += (y == 1.0) == (delta > 0)
    if decisive_with_longer:
        out["longer_won"] = longer_won / decisive_with_longer
        out["length_explains_all"] = longer_won in (0, decisive_with_longer)
    if not observed:
        return out
    if not out["decisive"]:  # every verdict a tie: the regression would only return its prior's 0.5
        out["length_controlled_note"] = "cannot be estimated: no verdict was decisive"
        return out
    difference_arr = np.asarray(difference, dtype=float)
    position_arr, outcome_arr = np.asarray(position), np.asarray(observed)
    index_arr = np.asarray(case_index)
    scale = difference_arr.std()

    def lc_rate(rows: Any) -> float:
        feature = np.tanh(difference_arr[rows] / scale) if scale > 0 else np.zeros(len(rows))
        return float(_sigmoid(fit_preference(feature, position_arr[rows], outcome_arr[rows])[0]))

    everything = np.arange(len(observed))
    out["length_controlled_win_rate"] = lc_rate(everything)
    # Resample cases (both orders of a case together) and refit. Not when length explains every
    # verdict: each resample is separated too, and its interval would only echo the prior.
    if len(records) >= 2 and not out["length_explains_all"]:
        by_case = [everything[index_arr == i] for i in range(len(records))]
        found = bootstrap(lambda chosen: lc_rate(np.concatenate([by_case[i] for i in chosen])), len(records),
                          samples=LC_BOOTSTRAP_SAMPLES)
        if found is not None and found[1] - found[0] < 1e-9:
            # every resample refits to one rate: the verdicts (position alone, say) leave the rate
            # at equal length to the prior, and a zero-width interval would claim certainty
            out["length_controlled_note"] = "no interval: every resample of the cases gives the same rate"
        else:
            out["length_controlled_ci95"] = found
    elif len(records) < 2:
        out["length_controlled_note"] = "no interval: one case"
    return out


def pairwise_lines(stats: dict[str, Any]) -> list[str]:
    """The A/B in plain text."""
    def pct(x: float | None) -> str:
        return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"

    def interval(ci: list[float] | None) -> str:
        return f" [{pct(ci[0])}, {pct(ci[1])}]" if ci else ""

    lines = [f"pairwise judge {stats['judge']} (run {stats['run_id']}): {stats['cases']} cases judged in both orders"
             + (f", {stats['errors']} errors" if stats["errors"] else "")]
    if stats["win_rate"] is None:
        return lines
    lengths = stats["mean_length"]
    note = stats.get("length_controlled_note")
    lc = (f"cannot be estimated ({note.split(': ', 1)[1]})" if stats["length_controlled_win_rate"] is None and note
          else pct(stats["length_controlled_win_rate"]) + interval(stats["length_controlled_ci95"])
          + (f" ({note})" if note else ""))
    lines += [f"  win rate of NEW over BASE: {pct(stats['win_rate'])}{interval(stats['ci95'])}  "
              f"(wins {stats['wins']}, losses {stats['losses']}, ties or splits {stats['ties']}; ties and splits "
              f"count half)",
              f"  length-controlled win rate: {lc}  (mean length: BASE {lengths['base']:.0f}, "
              f"NEW {lengths['new']:.0f} characters)",
              f"  position-inconsistent: {pct(stats['position_inconsistent'])} of cases (the two orders disagree)"]
    if stats["longer_won"] is not None:
        lines.append(f"  decisive verdicts that went to the longer response: {pct(stats['longer_won'])}")
    elif not stats.get("decisive"):
        lines.append("  decisive verdicts that went to the longer response: none (no verdict was decisive)")
    if stats["length_explains_all"]:
        lines.append("  WARNING: length alone explains every decisive verdict; the length-controlled rate then rests "
                     "on the assumption that equal-length answers are even, and has no interval (judge more cases, "
                     "or use a better judge)")
    return lines
