"""Reading a run at any size: streaming queries and SQL aggregates over a ``Store``.

Everything here answers in memory that does not grow with the run: rows come from one
ordered query fetched in chunks (``yield_per``: a server-side cursor on PostgreSQL, SQLite's
own step-by-step cursor), statistics from COUNT/SUM/MIN/MAX in the database, and lists of
cases (worst, failing, a sample, a page) are bounded by a LIMIT. The export, ``runs show``
for a live run, the report of a large run and the dashboard's pages read through it.
"""

from __future__ import annotations

import json
import math
from collections import namedtuple
from typing import Any, Iterator, Sequence

from sqlalchemy import Integer, String, and_, case, cast, func, literal, or_, select, type_coerce

from .models import CandidateRow, CaseRow, ResultRow, TrialOutputRow

#: Rows fetched per round trip by the streaming queries: big enough that the per-chunk cost
#: vanishes, small enough that a chunk of results with judge details stays a few megabytes.
CHUNK = 5000

#: What an export line holds, in order (``runs export``'s field order).
EXPORT_COLUMNS = ("case_id", "scorer", "value", "label", "passed", "details", "error", "media")
#: An export line: the result's columns, and ``media``, the records of its case's images and audio
#: (``[{"field", "sha256", "type", "size", "path", ...}]``; None for a case without media).
ExportRow = namedtuple("ExportRow", EXPORT_COLUMNS)


def _scorer_rank(names: Sequence[str], column: Any = ResultRow.scorer):
    """The scorer's place in the run's scorer list, as an SQL expression over ``column`` (unknown
    names first, as the in-memory sort of earlier versions placed them)."""
    if not names:
        return literal(0)
    return case({name: i for i, name in enumerate(names)}, value=column, else_=0)


def export_rows(store, run) -> Iterator[Any]:
    """Every result of ``run`` as a row of ``EXPORT_COLUMNS``, ordered by the case's position in
    the suite, then by the run's scorer order (then by insertion, for a stable order).

    The order is the database's: one query joining results to the suite's cases (indexed on
    both sides), sorted by the database (on disk when large) and fetched a chunk at a time.
    """
    names = [s["name"] for s in run.scorers or []]
    position = func.coalesce(CaseRow.position, 0)
    query = (
        select(*(getattr(ResultRow, c) for c in EXPORT_COLUMNS[:-1]), type_coerce(CaseRow.dialogue, String))
        .select_from(ResultRow)
        .outerjoin(CaseRow, and_(CaseRow.suite_id == run.suite_id, CaseRow.case_id == ResultRow.case_id))
        .where(ResultRow.run_id == run.id)
        .order_by(position, _scorer_rank(names), ResultRow.id)
    )
    with store.engine.connect() as connection:
        result = connection.execution_options(stream_results=True, yield_per=CHUNK).execute(query)
        for row in result:
            yield ExportRow(*row[:-1], media_records(row[-1]))


def media_records(dialogue: str | None) -> list[dict[str, Any]] | None:
    """The media records of a case's stored ``dialogue`` column (JSON text): each media part's
    ``media`` with the field it is in; None when the case has none (most: decoded only then)."""
    if not dialogue or '"media"' not in dialogue:
        return None
    from ..media import parts_of
    from ..scoring import Case

    fields = json.loads(dialogue)
    case_ = Case(id="", input_parts=fields.get("input_parts"), messages=fields.get("messages"))
    records = [{"field": field, **part["media"]} for field, part in parts_of(case_) if part.get("media")]
    return records or None


# -- statistics -----------------------------------------------------------------------------------

def _ok():
    return ResultRow.error.is_(None)


def live_summaries(store, run_id: str, names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per scorer, its statistics from the results stored so far: the run's own summary
    (``Store.summary``: the bootstrap up to its limit, SQL aggregates past it)."""
    return {name: store.summary(run_id, name) for name in names}


def run_statistics(store, run) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Per scorer of ``run``, its statistics, and the names of those computed live.

    A finished run (completed or failed) has them stored in ``runs.totals``; a run still running
    or interrupted (or a scorer its totals lack) gets ``live_summaries``, with the corpus-level
    metrics the run stored, if any."""
    stored = (run.totals or {}).get("scorers") or {}
    names = [s["name"] for s in run.scorers or []]
    finished = run.status in ("completed", "failed")
    live_names = [name for name in names if not (finished and name in stored)]
    live = live_summaries(store, run.id, live_names) if live_names else {}
    stats = {}
    for name in names:
        if name in live:
            stats[name] = live[name]
            for key in ("aggregate", "aggregate_error"):
                if key in stored.get(name, {}):
                    stats[name][key] = stored[name][key]
        else:
            stats[name] = dict(stored[name])
    return stats, live_names


def histogram(store, run_id: str, scorer: str, low: float, high: float, bins: int) -> list[int]:
    """Counts of a scorer's scored values in ``bins`` equal bins over [low, high], from one
    GROUP BY (a value equal to ``high`` falls in the last bin)."""
    if high <= low:
        high = low + 1.0
    width = (high - low) / bins
    offset = (ResultRow.value - low) / width
    # floor(): PostgreSQL's CAST rounds; SQLite's truncates, which is floor() for the
    # non-negative offsets inside the range (and SQLite may be built without floor())
    bucket = func.floor(offset) if store.engine.dialect.name == "postgresql" else cast(offset, Integer)
    query = (select(bucket, func.count())
             .where(ResultRow.run_id == run_id, ResultRow.scorer == scorer, _ok(), ResultRow.value.is_not(None))
             .group_by(bucket))
    counts = [0] * bins
    with store.engine.connect() as connection:
        for index, count in connection.execute(query):
            counts[min(bins - 1, max(0, int(index)))] += count
    return counts


# -- bounded lists of cases -----------------------------------------------------------------------

def worst_case_ids(store, run_id: str, scorer: str, *, higher_is_better: bool = True, limit: int = 50) -> list[str]:
    """The ``limit`` cases with the worst scored value (ties by case id)."""
    order = ResultRow.value.asc() if higher_is_better else ResultRow.value.desc()
    query = (select(ResultRow.case_id)
             .where(ResultRow.run_id == run_id, ResultRow.scorer == scorer, _ok(), ResultRow.value.is_not(None))
             .order_by(order, ResultRow.case_id).limit(limit))
    with store.engine.connect() as connection:
        return list(connection.execute(query).scalars())


def _failing():
    return or_(ResultRow.error.is_not(None), ResultRow.passed.is_(False))


def failing_case_ids(store, run, scorer: str, *, limit: int = 50) -> list[str]:
    """The first ``limit`` cases, in suite order, where the scorer errored or the threshold was missed."""
    query = (select(ResultRow.case_id)
             .outerjoin(CaseRow, and_(CaseRow.suite_id == run.suite_id, CaseRow.case_id == ResultRow.case_id))
             .where(ResultRow.run_id == run.id, ResultRow.scorer == scorer, _failing())
             .order_by(func.coalesce(CaseRow.position, 0), ResultRow.id).limit(limit))
    with store.engine.connect() as connection:
        return list(connection.execute(query).scalars())


def sample_case_ids(store, run, case_count: int, size: int = 200) -> list[str]:
    """A deterministic sample: the cases at evenly spaced positions of the suite (every k-th)."""
    step = max(1, math.ceil(case_count / size)) if case_count else 1
    query = (select(CaseRow.case_id).where(CaseRow.suite_id == run.suite_id, CaseRow.position % step == 0)
             .order_by(CaseRow.position).limit(size))
    with store.engine.connect() as connection:
        return list(connection.execute(query).scalars())


def generation_latency(store, run) -> dict[str, Any]:
    """The median latency of ``run``'s generation calls (the model under test answering a case),
    in milliseconds, and how many calls it is the median of: every epoch's output for a run
    with ``--epochs``, else every generated candidate. Calls without a recorded latency (a
    candidate from the data, a ``--batch`` answer, a run made before latencies were kept) are
    left out; none left: ``median_ms`` is None.

    The median is read in the database (a COUNT, then the middle one or two values in order),
    so memory does not grow with the run."""
    table = TrialOutputRow if (run.settings or {}).get("epochs", 1) > 1 else CandidateRow
    latency = table.details["latency_ms"].as_float()
    where = (table.run_id == run.id, latency.is_not(None))
    with store.engine.connect() as connection:
        calls = connection.execute(select(func.count()).select_from(table).where(*where)).scalar_one()
        if not calls:
            return {"median_ms": None, "calls": 0}
        middle = list(connection.execute(select(latency).where(*where).order_by(latency)
                                         .offset((calls - 1) // 2).limit(2 - calls % 2)).scalars())
    return {"median_ms": sum(middle) / len(middle), "calls": calls}


def page_case_ids(store, run, *, page: int, size: int, scorer: str | None = None,
                  failing: bool = False) -> tuple[list[str], bool]:
    """One page of a run's cases for the dashboard: (case ids, whether another page follows).

    Without a filter, the suite's cases in suite order, through the (suite_id, position) index:
    an OFFSET walks index entries only. With ``failing``, cases whose result of
    ``scorer`` (or of any scorer) errored or missed its threshold, in the order they were scored.
    """
    if failing or scorer:
        condition = [ResultRow.run_id == run.id]
        if scorer:
            condition.append(ResultRow.scorer == scorer)
        if failing:
            condition.append(_failing())
        query = select(ResultRow.case_id).where(*condition).group_by(ResultRow.case_id).order_by(func.min(ResultRow.id))
        if scorer:  # one row per case already: no grouping, so the (run_id, scorer) index serves the order
            query = select(ResultRow.case_id).where(*condition).order_by(ResultRow.id)
    else:
        query = select(CaseRow.case_id).where(CaseRow.suite_id == run.suite_id).order_by(CaseRow.position)
    query = query.offset(page * size).limit(size + 1)
    with store.engine.connect() as connection:
        ids = list(connection.execute(query).scalars())
    return ids[:size], len(ids) > size


def _chunks(items: Sequence[str], size: int = 500) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def cases_by_id(store, run, case_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Content, candidate and position of the given cases (a bounded list), by id; a case's
    ``dialogue`` holds the conversation its run generated, when the run generated one."""
    out: dict[str, dict[str, Any]] = {}
    with store.engine.connect() as connection:
        for chunk in _chunks(list(case_ids)):
            for row in connection.execute(
                select(CaseRow.case_id, CaseRow.position, CaseRow.input, CaseRow.reference, CaseRow.context,
                       CaseRow.case_metadata.label("case_metadata"), CaseRow.dialogue)
                .where(CaseRow.suite_id == run.suite_id, CaseRow.case_id.in_(chunk))
            ):
                out[row.case_id] = {"position": row.position, "input": row.input, "reference": row.reference,
                                    "context": list(row.context or []), "metadata": dict(row.case_metadata or {}),
                                    "candidate": None, "dialogue": dict(row.dialogue or {})}
            for case_id, text, generated in connection.execute(
                select(CandidateRow.case_id, CandidateRow.text, CandidateRow.dialogue)
                .where(CandidateRow.run_id == run.id, CandidateRow.case_id.in_(chunk))
            ):
                if case_id in out:
                    out[case_id]["candidate"] = text
                    if generated:  # a generated conversation is what the run's scorers judged
                        out[case_id]["dialogue"].update(generated)
    return out


def results_of_cases(store, run_id: str, case_ids: Sequence[str]) -> Iterator[Any]:
    """Every result of the given cases (a bounded list): case_id, scorer, value, label, passed,
    details, error, usage."""
    with store.engine.connect() as connection:
        for chunk in _chunks(list(case_ids)):
            yield from connection.execute(
                select(ResultRow.case_id, ResultRow.scorer, ResultRow.value, ResultRow.label, ResultRow.passed,
                       ResultRow.details, ResultRow.error, ResultRow.usage)
                .where(ResultRow.run_id == run_id, ResultRow.case_id.in_(chunk))
            )


def values_of_cases(store, run_id: str, scorer: str, case_ids: Sequence[str]) -> dict[str, tuple[Any, Any]]:
    """(value, error) of one scorer's results for the given cases, by case id."""
    out: dict[str, tuple[Any, Any]] = {}
    with store.engine.connect() as connection:
        for chunk in _chunks(list(case_ids)):
            for case_id, value, error in connection.execute(
                select(ResultRow.case_id, ResultRow.value, ResultRow.error)
                .where(ResultRow.run_id == run_id, ResultRow.scorer == scorer, ResultRow.case_id.in_(chunk))
            ):
                out[case_id] = (value, error)
    return out


# -- paired comparison ----------------------------------------------------------------------------

def paired_summary(store, base_id: str, new_id: str, scorer: str, *, higher_is_better: bool = True,
                   top: int = 10, tie: float = 1e-9) -> dict[str, Any]:
    """``comparison.compare_runs``' per-scorer numbers from SQL over the pairs of cases both runs
    scored without error: sums for the means and the delta's variance, counts for wins and
    losses, and the ``top`` most regressed cases by ORDER BY ... LIMIT.

    The interval is the normal approximation mean +- 1.96 * sd / sqrt(n) (what the paired
    bootstrap converges to for the thousands of pairs this is used for)."""
    from sqlalchemy.orm import aliased

    base, new = aliased(ResultRow), aliased(ResultRow)
    delta = new.value - base.value
    sign = 1 if higher_is_better else -1
    joined = (select().select_from(new)
              .join(base, and_(base.run_id == base_id, base.scorer == scorer, base.case_id == new.case_id))
              .where(new.run_id == new_id, new.scorer == scorer, new.error.is_(None), new.value.is_not(None),
                     base.error.is_(None), base.value.is_not(None)))
    sums = joined.add_columns(
        func.count(), func.sum(base.value), func.sum(new.value), func.sum(delta), func.sum(delta * delta),
        func.sum(case((delta * sign > tie, 1), else_=0)), func.sum(case((delta * sign < -tie, 1), else_=0)))
    worst = (joined.add_columns(new.case_id, base.value, new.value)
             .where(delta * sign < -tie).order_by(delta * sign, new.case_id).limit(top))
    with store.engine.connect() as connection:
        n, base_sum, new_sum, delta_sum, squares, wins, losses = connection.execute(sums).one()
        worst_rows = connection.execute(worst).all()
    n = n or 0
    mean = delta_sum / n if n else None
    ci = se = None
    if n > 1:
        sd = math.sqrt(max(0.0, (squares - n * mean * mean) / (n - 1)))
        se = sd / math.sqrt(n)
        half = 1.959964 * se
        ci = [mean - half, mean + half]
    return {
        "paired_cases": n,
        "base_mean": base_sum / n if n else None,
        "new_mean": new_sum / n if n else None,
        "mean_delta": mean,
        "se": se,
        "ci95": ci,
        "wins": wins or 0,
        "losses": losses or 0,
        "ties": n - (wins or 0) - (losses or 0),
        "regressed": bool(ci and (ci[1] < 0 if higher_is_better else ci[0] > 0)),
        "higher_is_better": higher_is_better,
        "worst_cases": [{"case_id": c, "base": b, "new": v, "delta": v - b} for c, b, v in worst_rows],
    }


def source_spans(store, run, case_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """The source trace and span ids (``metadata.trace_id`` / ``metadata.span_id``, hex) of the
    given cases (a bounded list) that carry both, by case id: the cases read from traces."""
    out: dict[str, tuple[str, str]] = {}
    with store.engine.connect() as connection:
        for chunk in _chunks(list(dict.fromkeys(case_ids))):
            for case_id, metadata in connection.execute(
                select(CaseRow.case_id, CaseRow.case_metadata.label("case_metadata"))
                .where(CaseRow.suite_id == run.suite_id, CaseRow.case_id.in_(chunk))
            ):
                trace_id, span_id = (metadata or {}).get("trace_id"), (metadata or {}).get("span_id")
                if isinstance(trace_id, str) and isinstance(span_id, str):
                    out[case_id] = (trace_id, span_id)
    return out
