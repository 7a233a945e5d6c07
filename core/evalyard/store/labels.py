"""The ``labels`` table and the queries over it: people's yes/no labels of a run's cases (``evalyard
label``), read back for ``evalyard calibrate --run RUN``, and the rows the sampler draws from.

Everything here reads a bounded number of rows however large the run: the sample is a few LIMIT
queries (one per bin of the judge's value), and only labelled cases (a person's work, so
hundreds, not millions) are ever read whole. What to do with the rows (which verdict is "yes",
the round robin over bins) is ``evalyard.analysis.labels``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from sqlalchemy import BigInteger, and_, cast, delete, exists, func, literal, or_, select

from ..scoring import Case
from . import chunked, insert_ignoring_duplicates, run_case, run_cases_query
from .models import CaseRow, LabelRow, ResultRow, RunRow, utcnow

if TYPE_CHECKING:
    from . import Store

#: Rows per IN (...) query when reading labelled cases (well under every database's limit).
IN_CHUNK = 500


def save_label(store: "Store", run_id: str, case_id: str, label: str, *, scorer: str = "",
               labeller: str = "") -> None:
    """Store (or replace) a person's label of one case, in one transaction (the label is checked by
    the caller: ``analysis.labels.LABELS``)."""
    keys = (LabelRow.run_id == run_id, LabelRow.case_id == case_id, LabelRow.scorer == scorer)
    with store.engine.begin() as connection:
        connection.execute(delete(LabelRow).where(*keys))
        # a concurrent save of the same case (a double press) inserted first: its label stays
        insert_ignoring_duplicates(connection, LabelRow.__table__, [{
            "run_id": run_id, "case_id": case_id, "scorer": scorer, "label": label, "labeller": labeller,
            "created_at": utcnow()}], ("run_id", "case_id", "scorer"))


def _applies(run_id: str, scorer: str | None):
    """The labels that speak for ``scorer`` in this run: its own and the scorer-less ones."""
    mine = LabelRow.run_id == run_id
    return mine if scorer is None else and_(mine, or_(LabelRow.scorer == scorer, LabelRow.scorer == ""))


def stored_labels(store: "Store", run_id: str, scorer: str | None = None) -> dict[str, dict[str, Any]]:
    """Per labelled case: its label, labeller and time. A label given for ``scorer`` wins over a
    scorer-less one; with ``scorer`` None, any label (the newest when a case has several)."""
    query = (select(LabelRow.case_id, LabelRow.scorer, LabelRow.label, LabelRow.labeller, LabelRow.created_at)
             .where(_applies(run_id, scorer)).order_by(LabelRow.created_at, LabelRow.id))
    found: dict[str, dict[str, Any]] = {}
    with store.engine.connect() as connection:
        for case_id, for_scorer, label, labeller, created_at in connection.execute(query):
            if scorer and case_id in found and found[case_id]["scorer"] == scorer and for_scorer == "":
                continue
            found[case_id] = {"label": label, "scorer": for_scorer, "labeller": labeller, "at": created_at}
    return found


def run_cases(store: "Store", run: RunRow, case_ids: Sequence[str]) -> dict[str, Case]:
    """These cases of ``run`` (suite content plus the run's candidate), by id, in suite order."""
    cases = CaseRow.__table__.c
    found: list[tuple[int, Case]] = []
    for chunk in chunked(case_ids, IN_CHUNK):
        query = run_cases_query(run.id).where(cases.suite_id == run.suite_id, cases.case_id.in_(chunk))
        with store.engine.connect() as connection:
            found.extend((row[0], run_case(row)) for row in connection.execute(query))
    return {case.id: case for _, case in sorted(found, key=lambda item: item[0])}


def verdicts(store: "Store", run_id: str, scorer: str, case_ids: Sequence[str], *, details: bool = False,
             errors: bool = True) -> dict[str, tuple]:
    """One scorer's results of these cases, by case id: (value, label, passed), then (details,
    error) with ``details``; without ``errors``, failed results are left out."""
    columns = [ResultRow.case_id, ResultRow.value, ResultRow.label, ResultRow.passed]
    if details:
        columns += [ResultRow.details, ResultRow.error]
    conditions = [ResultRow.run_id == run_id, ResultRow.scorer == scorer]
    if not errors:
        conditions.append(ResultRow.error.is_(None))
    out: dict[str, tuple] = {}
    for chunk in chunked(case_ids, IN_CHUNK):
        with store.engine.connect() as connection:
            out.update({row[0]: tuple(row[1:]) for row in connection.execute(
                select(*columns).where(*conditions, ResultRow.case_id.in_(chunk)))})
    return out


def _spread(seed: int):
    """A deterministic shuffle key over result rows, so a bin's sample is spread over the run
    instead of its first rows, without reading the bin: the row id through a multiplicative hash
    (plus the seed) and a squaring, both modulo a prime just under the square root of 2**63, so
    every product fits a 64-bit integer (row ids up to two billion, seeds up to ``MAX_SEED``) and
    seeds give unrelated orders (a multiplicative hash alone gives near-identical ones)."""
    def big(number: int):  # PostgreSQL would bind these as INTEGER and overflow
        return literal(number, BigInteger)

    mixed = (cast(ResultRow.id, BigInteger) * big(2654435761) + big(seed * 1000003)) % big(_PRIME)
    return (mixed * mixed) % big(_PRIME)


#: A prime below the square root of 2**63 (see ``_spread``).
_PRIME = 3037000453
#: The largest seed of the sampler (see ``_spread``).
MAX_SEED = 10_000


def unlabelled_strata(store: "Store", run: RunRow, scorer: str, size: int, *, bins: int,
                      seed: int = 0) -> list[tuple[str, list[str]]]:
    """Per stratum of one scorer's results, its name and up to ``size`` unlabelled case ids in a
    seeded spread order: ``bins`` equal-width bins of the value ("bin 2/5"), then one stratum per
    label of results with a label and no value ("label yes"); one LIMIT query each. Results with
    neither give no verdict to check and are in no stratum."""
    scored = and_(ResultRow.run_id == run.id, ResultRow.scorer == scorer, ResultRow.error.is_(None))
    unlabelled = ~exists().where(LabelRow.run_id == run.id, LabelRow.case_id == ResultRow.case_id,
                                 or_(LabelRow.scorer == scorer, LabelRow.scorer == ""))
    with store.engine.connect() as connection:
        low, high = connection.execute(select(func.min(ResultRow.value), func.max(ResultRow.value))
                                       .where(scored)).one()
        strata = []
        if low is not None:
            count = bins if high > low else 1
            width = (high - low) / count
            for b in range(count):
                lower = ResultRow.value >= low + b * width
                upper = ResultRow.value < low + (b + 1) * width if b < count - 1 else ResultRow.value <= high
                strata.append((f"bin {b + 1}/{count}", and_(lower, upper)))
        # results with a label and no value (a verdict-only judge): a stratum per label
        labels = connection.execute(select(ResultRow.label).where(scored, ResultRow.value.is_(None),
                                                                  ResultRow.label.is_not(None))
                                    .group_by(ResultRow.label).order_by(ResultRow.label).limit(bins)).scalars().all()
        strata += [(f"label {label}", and_(ResultRow.value.is_(None), ResultRow.label == label)) for label in labels]
        return [(why, list(connection.execute(select(ResultRow.case_id).where(scored, condition, unlabelled)
                                              .order_by(_spread(seed), ResultRow.id).limit(size)).scalars()))
                for why, condition in strata]
