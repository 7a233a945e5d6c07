"""The ``review_sessions`` and ``reviews`` tables and the queries over them: blind side-by-side
reviews of two runs (``evalyard review BASE NEW``), read back for the session's summary,
``compare``, the report and ``calibrate --reviews``.

The design mirrors ``store.labels``: one verdict per (session, case, reviewer), a new verdict
replaces the old one in one transaction, and a concurrent double press keeps the first. Reviews
are a person's work (hundreds of rows, not millions), so they are read whole.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, delete, or_, select
from sqlalchemy.orm import aliased
from sqlmodel import Session

from ..errors import UnknownNameError
from . import insert_ignoring_duplicates
from .models import CandidateRow, ReviewRow, ReviewSessionRow, utcnow

if TYPE_CHECKING:
    from . import Store


def answered_by_both(store: "Store", base_run: str, new_run: str) -> list[str]:
    """The case ids both runs have an answer for, in NEW's order (one join)."""
    b, n = aliased(CandidateRow), aliased(CandidateRow)
    query = (select(n.case_id).select_from(n)
             .join(b, and_(b.run_id == base_run, b.case_id == n.case_id, b.text.is_not(None)))
             .where(n.run_id == new_run, n.text.is_not(None)).order_by(n.id))
    with store.engine.connect() as connection:
        return list(connection.execute(query).scalars())


def create_session(store: "Store", base_run: str, new_run: str, case_ids: list[str], plan: dict[str, Any]) -> str:
    """A new session over these cases (in the order offered); its id is random (it is shown on
    the page, so it must say nothing of the runs) and so is its secret."""
    session_id = "rv" + secrets.token_hex(5)
    with Session(store.engine) as session:
        session.add(ReviewSessionRow(id=session_id, base_run=base_run, new_run=new_run, secret=secrets.token_hex(32),
                                     case_ids=list(case_ids), plan=dict(plan), created_at=utcnow()))
        session.commit()
    return session_id


def get_session(store: "Store", ref: str) -> ReviewSessionRow:
    """A session by id or unique id prefix."""
    with Session(store.engine) as session:
        row = session.get(ReviewSessionRow, ref)
        if row is None and ref:
            matches = session.execute(select(ReviewSessionRow).where(ReviewSessionRow.id.startswith(ref))
                                      .limit(2)).scalars().all()
            if len(matches) > 1:
                raise UnknownNameError(f"review session id prefix {ref!r} is ambiguous")
            row = matches[0] if matches else None
        if row is None:
            raise UnknownNameError(f"no review session {ref!r} in {store.url}")
        session.expunge(row)
        return row


def newest_session(store: "Store", base_run: str, new_run: str) -> ReviewSessionRow | None:
    """The newest session of exactly this BASE and NEW, to resume."""
    with Session(store.engine) as session:
        row = session.execute(select(ReviewSessionRow).where(ReviewSessionRow.base_run == base_run,
                                                             ReviewSessionRow.new_run == new_run)
                              .order_by(ReviewSessionRow.created_at.desc()).limit(1)).scalars().first()
        if row is not None:
            session.expunge(row)
        return row


def save_review(store: "Store", session_id: str, case_id: str, reviewer: str, left: str, verdict: str,
                note: str = "") -> None:
    """Store (or replace) one reviewer's verdict on one case, in one transaction (checked by the caller)."""
    keys = (ReviewRow.session_id == session_id, ReviewRow.case_id == case_id, ReviewRow.reviewer == reviewer)
    with store.engine.begin() as connection:
        connection.execute(delete(ReviewRow).where(*keys))
        insert_ignoring_duplicates(connection, ReviewRow.__table__, [{
            "session_id": session_id, "case_id": case_id, "reviewer": reviewer, "left": left, "verdict": verdict,
            "note": note, "created_at": utcnow()}], ("session_id", "case_id", "reviewer"))


_COLUMNS = (ReviewRow.session_id, ReviewRow.case_id, ReviewRow.reviewer, ReviewRow.left, ReviewRow.verdict,
            ReviewRow.note, ReviewRow.created_at)


def _rows(store: "Store", query) -> list[dict[str, Any]]:
    with store.engine.connect() as connection:
        return [dict(zip(("session", "case_id", "reviewer", "left", "verdict", "note", "at"), row))
                for row in connection.execute(query.order_by(ReviewRow.created_at, ReviewRow.id))]


def session_reviews(store: "Store", session_id: str) -> list[dict[str, Any]]:
    """The session's verdicts, oldest first; ``left`` is "base" or "new"."""
    return _rows(store, select(*_COLUMNS).where(ReviewRow.session_id == session_id))


def pair_reviews(store: "Store", base_run: str, new_run: str) -> list[dict[str, Any]]:
    """Every verdict on this pair of runs over all their sessions, in the BASE/NEW frame of the
    call: a session made the other way round has its sides swapped back."""
    query = (select(*_COLUMNS, ReviewSessionRow.base_run)
             .join(ReviewSessionRow, ReviewSessionRow.id == ReviewRow.session_id)
             .where(or_((ReviewSessionRow.base_run == base_run) & (ReviewSessionRow.new_run == new_run),
                        (ReviewSessionRow.base_run == new_run) & (ReviewSessionRow.new_run == base_run))))
    out = []
    with store.engine.connect() as connection:
        for *row, session_base in connection.execute(query.order_by(ReviewRow.created_at, ReviewRow.id)):
            found = dict(zip(("session", "case_id", "reviewer", "left", "verdict", "note", "at"), row))
            if session_base != base_run:
                found["left"] = {"base": "new", "new": "base"}[found["left"]]
            out.append(found)
    return out


def delete_session(store: "Store", session_id: str) -> None:
    """A session and its verdicts (a session whose page could not be served, so nothing stays written)."""
    with store.engine.begin() as connection:
        connection.execute(delete(ReviewRow).where(ReviewRow.session_id == session_id))
        connection.execute(delete(ReviewSessionRow).where(ReviewSessionRow.id == session_id))
