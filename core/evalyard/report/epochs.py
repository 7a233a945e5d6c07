"""A run's repeated trials (``--epochs N``) as the pages show them: for a bounded set of cases,
one row per epoch with that epoch's output and each scorer's verdict on it.

Both the single-run report (in its case detail) and the experiment page (in its case view, a
cell beside the other) show these rows; they come from here, so the two read the same.

Which cases: a page holds the epochs of at most ``limit`` of the cases it shows, those whose
verdict changed across epochs first (the ones worth reading: found by one streamed pass over
each scorer's trials, stopped once enough are found), then the others in the page's order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from ..store import Store

#: cases whose epochs one page holds, at most
EPOCH_CASES = 200


def epochs_of(run) -> int:
    """Trials per case of ``run`` (1 without ``--epochs``)."""
    return int((run.settings or {}).get("epochs", 1) or 1)


def epoch_rows(trials: dict[str, Any]) -> list[dict[str, Any]]:
    """One case's trials (an entry of ``store.trials.trials_of_cases``) as a row per epoch:
    ``{"epoch", "output", "error", "verdicts": {scorer: {value, label, passed, error}}}``."""
    rows: dict[int, dict[str, Any]] = {}

    def row(epoch: int) -> dict[str, Any]:
        return rows.setdefault(epoch, {"epoch": epoch, "output": None, "error": None, "verdicts": {}})

    for output in trials["outputs"]:
        row(output["epoch"]).update(output=output["text"], error=output["error"])
    for score in trials["scores"]:
        row(score["epoch"])["verdicts"][score["scorer"]] = {
            k: score[k] for k in ("value", "label", "passed", "error")}
    return [rows[e] for e in sorted(rows)]


def changed_case_ids(store: Store, run, scorers: Sequence[str], among: Sequence[str], limit: int) -> list[str]:
    """Up to ``limit`` of the cases ``among`` whose verdict changed across epochs for some scorer,
    in the order the trials are read (case id); the rule is ``stability``'s."""
    from ..analysis.reducers import Trial, verdict_changed
    from ..store.trials import trials_by_case

    wanted, found = set(among), []
    for scorer in scorers:
        for case_id, rows in trials_by_case(store, run.id, scorer):
            if len(found) >= limit:
                return found
            if case_id in wanted and case_id not in found and verdict_changed([Trial(*r[1:]) for r in rows]):
                found.append(case_id)
    return found


def case_epochs(store: Store, run, case_ids: Sequence[str], limit: int = EPOCH_CASES) -> dict[str, list[dict[str, Any]]]:
    """Case id -> its epoch rows, for at most ``limit`` of ``case_ids`` (see the module
    docstring); empty for a run without epochs."""
    from ..store.trials import trials_of_cases

    if epochs_of(run) < 2 or not case_ids:
        return {}
    if len(case_ids) <= limit:
        chosen = list(case_ids)
    else:
        changed = changed_case_ids(store, run, [s["name"] for s in run.scorers or []], case_ids, limit)
        chosen = list(dict.fromkeys([*changed, *case_ids]))[:limit]
    return {case_id: epoch_rows(trials) for case_id, trials in trials_of_cases(store, run.id, chosen).items()}
