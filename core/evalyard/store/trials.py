"""The store's operations on repeated trials (``--epochs N``): each epoch's generated output and
each epoch's score, written with the case's reduced result in one transaction, and read back
streamed, grouped by case, for the stability figures and the case view, or one row per trial for
``runs export --trials``."""

from __future__ import annotations

from itertools import groupby
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from sqlalchemy import and_, func, select, update

from . import insert_ignoring_duplicates
from .models import CandidateRow, CaseRow, ResultRow, TrialOutputRow, TrialRow, utcnow

if TYPE_CHECKING:
    from . import Store

#: What a line of ``runs export --trials`` holds, in order: a trial (one case, one epoch, one
#: scorer) with the fields of a result, and the epoch's generated output (``output``: its text,
#: ``output_error``: why the generation failed; both empty when the run scored the cases' own
#: candidates).
TRIAL_COLUMNS = ("case_id", "epoch", "scorer", "value", "label", "passed", "details", "error", "output",
                 "output_error")


def done_outputs(store: Store, run_id: str, case_ids: Iterable[str]) -> set[tuple[str, int]]:
    """(case, epoch) pairs of these cases whose output was generated (or failed: kept as such)."""
    query = (select(TrialOutputRow.case_id, TrialOutputRow.epoch)
             .where(TrialOutputRow.run_id == run_id, TrialOutputRow.case_id.in_(list(case_ids))))
    with store.engine.connect() as connection:
        return {(case_id, epoch) for case_id, epoch in connection.execute(query).all()}


def write_outputs(store: Store, run_id: str, rows: list[dict[str, Any]]) -> None:
    """Store generated outputs (``case_id``, ``epoch``, ``text``, ``details``, ``error``) in one
    transaction; epoch 0's is also the run's candidate of the case."""
    if not rows:
        return
    with store.engine.begin() as connection:
        insert_ignoring_duplicates(connection, TrialOutputRow.__table__, [{"run_id": run_id, **r} for r in rows],
                                   ("run_id", "case_id", "epoch"))
        for row in rows:
            if row["epoch"] == 0:
                connection.execute(update(CandidateRow)
                                   .where(CandidateRow.run_id == run_id, CandidateRow.case_id == row["case_id"])
                                   .values(text=row.get("text"), details=row.get("details"), error=row.get("error"),
                                           dialogue=row.get("dialogue")))


def outputs_of(store: Store, run_id: str, case_ids: Iterable[str]) -> dict[tuple[str, int], tuple[Any, ...]]:
    """(case, epoch) -> (text, error, dialogue) of these cases' generated outputs (dialogue: a
    generated conversation's ``{"messages": [...]}``, else None)."""
    query = (select(TrialOutputRow.case_id, TrialOutputRow.epoch, TrialOutputRow.text, TrialOutputRow.error,
                    TrialOutputRow.dialogue)
             .where(TrialOutputRow.run_id == run_id, TrialOutputRow.case_id.in_(list(case_ids))))
    with store.engine.connect() as connection:
        return {(c, e): (t, err, d) for c, e, t, err, d in connection.execute(query).all()}


def write_scored(store: Store, run_id: str, results: list[dict[str, Any]], trials: list[dict[str, Any]]) -> None:
    """One batch of reduced results and the trials they reduce, in one transaction: a case's
    result exists exactly when all its trials do, so a resumed run rescores whole cases."""
    if not results:
        return
    now = utcnow()
    for row in results:
        row["run_id"] = run_id
        row.setdefault("created_at", now)
    with store.engine.begin() as connection:
        insert_ignoring_duplicates(connection, TrialRow.__table__, [{"run_id": run_id, **t} for t in trials],
                                   ("run_id", "case_id", "epoch", "scorer"))
        insert_ignoring_duplicates(connection, ResultRow.__table__, results, ("run_id", "case_id", "scorer"))


def trials_by_case(store: Store, run_id: str, scorer: str) -> Iterator[tuple[str, list[Any]]]:
    """(case id, its trials in epoch order) of one scorer, streamed in case order; each trial a
    row of (epoch, value, label, passed, error)."""
    query = (select(TrialRow.case_id, TrialRow.epoch, TrialRow.value, TrialRow.label, TrialRow.passed,
                    TrialRow.error)
             .where(TrialRow.run_id == run_id, TrialRow.scorer == scorer)
             .order_by(TrialRow.case_id, TrialRow.epoch))
    with store.engine.connect() as connection:
        rows = connection.execution_options(yield_per=10_000).execute(query)
        for case_id, group in groupby(rows, key=lambda r: r[0]):
            yield case_id, [r[1:] for r in group]


def trials_of_cases(store: Store, run_id: str, case_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The epochs of the given cases (a bounded list, as a page shows): per case, each epoch's
    output and each scorer's trial, in epoch order. Cases with no trial are left out."""
    from .reading import _chunks

    found: dict[str, dict[str, Any]] = {}

    def of(case_id: str) -> dict[str, Any]:
        return found.setdefault(case_id, {"outputs": [], "scores": []})

    with store.engine.connect() as connection:
        for chunk in _chunks(list(case_ids)):
            for c, e, t, err in connection.execute(
                    select(TrialOutputRow.case_id, TrialOutputRow.epoch, TrialOutputRow.text, TrialOutputRow.error)
                    .where(TrialOutputRow.run_id == run_id, TrialOutputRow.case_id.in_(chunk))
                    .order_by(TrialOutputRow.case_id, TrialOutputRow.epoch)):
                of(c)["outputs"].append({"epoch": e, "text": t, "error": err})
            for c, e, sc, v, lb, p, err in connection.execute(
                    select(TrialRow.case_id, TrialRow.epoch, TrialRow.scorer, TrialRow.value, TrialRow.label,
                           TrialRow.passed, TrialRow.error)
                    .where(TrialRow.run_id == run_id, TrialRow.case_id.in_(chunk))
                    .order_by(TrialRow.case_id, TrialRow.epoch, TrialRow.scorer)):
                of(c)["scores"].append({"epoch": e, "scorer": sc, "value": v, "label": lb, "passed": p, "error": err})
    return found


def case_trials(store: Store, run_id: str, case_id: str) -> dict[str, Any]:
    """One case's epochs: each epoch's output and each scorer's trial."""
    return trials_of_cases(store, run_id, [case_id]).get(case_id) or {"outputs": [], "scores": []}


def has_trials(store: Store, run_id: str) -> bool:
    """Whether ``run_id`` stored any trial (a run made with ``--epochs N``, N > 1)."""
    with store.engine.connect() as connection:
        return connection.execute(select(TrialRow.id).where(TrialRow.run_id == run_id).limit(1)).first() is not None


def trial_export_rows(store: Store, run: Any) -> Iterator[Any]:
    """Every trial of ``run`` as a row of ``TRIAL_COLUMNS``, ordered by the case's position in
    the suite, then epoch, then the run's scorer order; streamed as ``export_rows`` is (one
    ordered query joining the epoch's output, fetched a chunk at a time)."""
    from .reading import CHUNK, _scorer_rank

    names = [s["name"] for s in run.scorers or []]
    query = (
        select(TrialRow.case_id, TrialRow.epoch, TrialRow.scorer, TrialRow.value, TrialRow.label, TrialRow.passed,
               TrialRow.details, TrialRow.error, TrialOutputRow.text, TrialOutputRow.error)
        .select_from(TrialRow)
        .outerjoin(CaseRow, and_(CaseRow.suite_id == run.suite_id, CaseRow.case_id == TrialRow.case_id))
        .outerjoin(TrialOutputRow, and_(TrialOutputRow.run_id == TrialRow.run_id,
                                        TrialOutputRow.case_id == TrialRow.case_id,
                                        TrialOutputRow.epoch == TrialRow.epoch))
        .where(TrialRow.run_id == run.id)
        .order_by(func.coalesce(CaseRow.position, 0), TrialRow.case_id, TrialRow.epoch,
                  _scorer_rank(names, TrialRow.scorer), TrialRow.id)
    )
    with store.engine.connect() as connection:
        result = connection.execution_options(stream_results=True, yield_per=CHUNK).execute(query)
        yield from result
