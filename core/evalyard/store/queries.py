"""Named queries of the modules above the store: what the statistics, the planner, the report and
the labelling page read, and the few writes they make. Each returns plain rows, a dict or an
iterator; none holds an ORM session open past its return, and the ones over a whole run stream
(``yield_per``), so a million-case run is read in bounded memory.

They live here, not in their callers, so that the schema is known to one package: a second
backend, or a change to the results table, touches ``store/`` only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

from sqlalchemy import and_, case, func, insert, select
from sqlalchemy.orm import aliased

from .models import CandidateRow, CaseRow, ModelCallRow, ResultRow, RunRow, SuiteRow

if TYPE_CHECKING:
    from . import Store

#: Rows fetched per round trip by the streaming queries below (as ``reading.CHUNK``).
STREAM_CHUNK = 10_000
#: Keys per IN (...) of the response-cache lookup (well under every database's limit).
LOOKUP_CHUNK = 500

# -- a run's results, streamed or paged (``RunResult.results``) ------------------------------------

RESULT_FIELDS = ("case_id", "scorer", "value", "label", "passed", "details", "error", "usage")


def result_dicts(store: "Store", run_id: str, *, offset: int | None = None,
                 limit: int | None = None) -> Iterator[dict[str, Any]]:
    """One dict of ``RESULT_FIELDS`` per result, in the order they were stored; ``offset`` and
    ``limit`` read one page only. Streamed in chunks."""
    query = (select(*(getattr(ResultRow, name) for name in RESULT_FIELDS))
             .where(ResultRow.run_id == run_id).order_by(ResultRow.id))
    if offset is not None:
        query = query.offset(max(0, offset))
    if limit is not None:
        query = query.limit(limit)
    with store.engine.connect() as connection:
        for row in connection.execution_options(yield_per=5000).execute(query):
            yield dict(zip(RESULT_FIELDS, row))


def report_rows(store: "Store", run_id: str) -> Iterator[Any]:
    """A run's results as plain rows of the columns a report shows (case_id, scorer, value, label,
    passed, details, error, usage), in stored order. A column select, as ``Store.outcomes`` does:
    building an ORM object per result is most of the cost of a large report."""
    query = (select(ResultRow.case_id, ResultRow.scorer, ResultRow.value, ResultRow.label, ResultRow.passed,
                    ResultRow.details, ResultRow.error, ResultRow.usage)
             .where(ResultRow.run_id == run_id).order_by(ResultRow.id))
    with store.engine.connect() as connection:
        yield from connection.execute(query.execution_options(yield_per=2000))


# -- paired comparison ------------------------------------------------------------------------------

def paired_values(store: "Store", base_id: str, new_id: str, scorer: str) -> Iterator[tuple[str, float, float]]:
    """(case id, base value, new value) of the cases both runs scored without error, in the NEW
    run's order: one join, streamed."""
    b, n = aliased(ResultRow), aliased(ResultRow)
    query = (select(n.case_id, b.value, n.value).select_from(n)
             .join(b, and_(b.run_id == base_id, b.scorer == scorer, b.case_id == n.case_id))
             .where(n.run_id == new_id, n.scorer == scorer, n.error.is_(None), n.value.is_not(None),
                    b.error.is_(None), b.value.is_not(None))
             .order_by(n.id))
    with store.engine.connect() as connection:
        yield from connection.execution_options(yield_per=STREAM_CHUNK).execute(query)


# -- clusters (``--cluster metadata.FIELD``) ---------------------------------------------------------

def _cluster_of(path: tuple[str, ...]):
    column = CaseRow.case_metadata[path[0] if len(path) == 1 else path]
    return column.as_string()


def _grouped(query, path: tuple[str, ...], case_id, suite_id: int):
    """``query`` joined to the suite's cases and grouped by cluster: a case without the field
    groups on its own id (the second key is NULL for every case that has one)."""
    cluster = _cluster_of(path)
    alone = case((cluster.is_(None), case_id), else_=None)
    return (query.outerjoin(CaseRow, and_(CaseRow.suite_id == suite_id, CaseRow.case_id == case_id))
            .group_by(cluster, alone).add_columns(func.count(cluster)))


def _totals(store: "Store", query) -> tuple[list[tuple[int, float]], int]:
    """Each cluster's (count, sum), and how many of the cases had the field. The database sums
    each cluster, so memory grows with the clusters, never with the cases."""
    with store.engine.connect() as connection:
        rows = connection.execute(query).all()
    return [(n, s) for n, s, _ in rows], sum(with_field for _, _, with_field in rows)


def cluster_totals(store: "Store", run: RunRow, scorer: str,
                   path: tuple[str, ...]) -> tuple[list[tuple[int, float]], int]:
    """(count, sum) of one scorer's values per cluster of ``run``'s cases, and how many cases had
    the field: errors and missing values are left out, as the mean leaves them out."""
    query = (select(func.count(), func.sum(ResultRow.value)).select_from(ResultRow)
             .where(ResultRow.run_id == run.id, ResultRow.scorer == scorer, ResultRow.error.is_(None),
                    ResultRow.value.is_not(None)))
    return _totals(store, _grouped(query, path, ResultRow.case_id, run.suite_id))


def paired_cluster_totals(store: "Store", base_id: str, new_run: RunRow, scorer: str,
                          path: tuple[str, ...]) -> tuple[list[tuple[int, float]], int]:
    """(count, sum of NEW - BASE) per cluster over the cases both runs scored; the clusters are the
    NEW run's case metadata."""
    base, new = aliased(ResultRow), aliased(ResultRow)
    query = (select(func.count(), func.sum(new.value - base.value)).select_from(new)
             .join(base, and_(base.run_id == base_id, base.scorer == scorer, base.case_id == new.case_id))
             .where(new.run_id == new_run.id, new.scorer == scorer, new.error.is_(None), new.value.is_not(None),
                    base.error.is_(None), base.value.is_not(None)))
    return _totals(store, _grouped(query, path, new.case_id, new_run.suite_id))


def add_to_scorer_totals(store: "Store", run_id: str, key: str, by_scorer: dict[str, Any]) -> None:
    """Keep ``by_scorer[name]`` under ``totals["scorers"][name][key]`` of a run, in one transaction
    (a clustered summary beside the scorer's other statistics)."""
    from sqlmodel import Session

    with Session(store.engine) as session:
        row = session.get(RunRow, run_id)
        stored = dict(row.totals or {})
        stored["scorers"] = {name: {**summary, **({key: by_scorer[name]} if name in by_scorer else {})}
                             for name, summary in (stored.get("scorers") or {}).items()}
        row.totals = stored
        session.add(row)
        session.commit()


# -- what a plan reads (``run --plan``): the response cache and earlier calls ------------------------

def cached_calls(store: "Store", keys: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Usage, response and latency of the cached model calls among ``keys``, by key."""
    t = ModelCallRow.__table__
    out: dict[str, dict[str, Any]] = {}
    unique = list(dict.fromkeys(keys))
    with store.engine.connect() as connection:
        for start in range(0, len(unique), LOOKUP_CHUNK):
            rows = connection.execute(select(t.c.key, t.c.usage, t.c.response, t.c.latency_ms)
                                      .where(t.c.key.in_(unique[start:start + LOOKUP_CHUNK]))).all()
            out.update({row.key: {"usage": row.usage, "response": row.response, "latency_ms": row.latency_ms}
                        for row in rows})
    return out


def recent_calls(store: "Store", model: str, limit: int) -> list[dict[str, Any]]:
    """The newest ``limit`` recorded calls of ``model``: request, usage and latency."""
    t = ModelCallRow.__table__
    with store.engine.connect() as connection:
        found = connection.execute(select(t.c.request, t.c.usage, t.c.latency_ms).where(t.c.model == model)
                                   .order_by(t.c.created_at.desc()).limit(limit)).all()
    return [{"request": r.request or {}, "usage": r.usage or {}, "latency_ms": r.latency_ms} for r in found]


def scorer_usages(store: "Store", scorer: str, limit: int) -> list[dict[str, Any]]:
    """Up to ``limit`` usage records of earlier results of ``scorer`` (any run)."""
    with store.engine.connect() as connection:
        rows = connection.execute(select(ResultRow.usage).where(ResultRow.scorer == scorer,
                                                                 ResultRow.usage.is_not(None))
                                  .limit(limit)).all()
    return [r[0] for r in rows if r[0]]


# -- bulk writes (synthetic runs for benchmarks and the large-report tests) --------------------------

def insert_bulk_run(store: "Store", suite: dict[str, Any], run: dict[str, Any],
                    chunks: Iterable[tuple[list[dict], list[dict], list[dict]]]) -> int:
    """A suite row and a run row, then (cases, candidates, results) rows chunk by chunk with Core
    executemany, one transaction per chunk (rows take their suite id from the suite inserted
    first). Returns the suite id."""
    with store.engine.begin() as connection:
        suite_id = connection.execute(insert(SuiteRow).values(**suite)).inserted_primary_key[0]
        connection.execute(insert(RunRow).values(suite_id=suite_id, **run))
    for case_rows, candidate_rows, result_rows in chunks:
        with store.engine.begin() as connection:
            connection.execute(insert(CaseRow), [{**row, "suite_id": suite_id} for row in case_rows])
            connection.execute(insert(CandidateRow), candidate_rows)
            connection.execute(insert(ResultRow), result_rows)
    return suite_id
