"""The store's operations on experiments: a grid's row, which run is which cell, and listings."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select
from sqlmodel import Session

from ..errors import UnknownNameError
from . import insert_ignoring_duplicates
from .models import ExperimentRow, ExperimentRunRow, utcnow

if TYPE_CHECKING:
    from . import Store


def create_experiment(store: Store, *, name: str, source: str, spec: dict[str, Any],
                      cells: list[dict[str, Any]]) -> str:
    experiment_id = "x" + uuid.uuid4().hex[:11]
    with Session(store.engine) as session:
        session.add(ExperimentRow(id=experiment_id, name=name or experiment_id, source=source, spec=spec,
                                  cells=cells, created_at=utcnow()))
        session.commit()
    return experiment_id


def add_cell_run(store: Store, experiment_id: str, cell: int, run_id: str) -> None:
    """Record ``run_id`` as cell ``cell`` (idempotent: a cell keeps its first run)."""
    with store.engine.begin() as connection:
        insert_ignoring_duplicates(connection, ExperimentRunRow,
                                   [{"experiment_id": experiment_id, "cell": cell, "run_id": run_id}],
                                   keys=("experiment_id", "cell"))


def cell_runs(store: Store, experiment_id: str) -> dict[int, str]:
    """Cell index -> run id, for the cells whose run exists."""
    with store.engine.connect() as connection:
        rows = connection.execute(select(ExperimentRunRow.cell, ExperimentRunRow.run_id)
                                  .where(ExperimentRunRow.experiment_id == experiment_id)).all()
    return {cell: run_id for cell, run_id in rows}


def get_experiment(store: Store, ref: str) -> ExperimentRow:
    """An experiment by id, unique id prefix, or name (the newest of that name)."""
    with Session(store.engine) as session:
        row = session.get(ExperimentRow, ref)
        if row is None and ref:
            matches = session.execute(select(ExperimentRow).where(ExperimentRow.id.startswith(ref)).limit(2)
                                      ).scalars().all()
            if len(matches) > 1:
                raise UnknownNameError(f"experiment id prefix {ref!r} is ambiguous")
            row = matches[0] if matches else None
        if row is None:
            row = session.execute(select(ExperimentRow).where(ExperimentRow.name == ref)
                                  .order_by(ExperimentRow.created_at.desc()).limit(1)).scalars().first()
        if row is None:
            raise UnknownNameError(f"no experiment {ref!r} in {store.url}")
        session.expunge(row)
        return row


def find_experiment(store: Store, ref: str) -> ExperimentRow | None:
    """``get_experiment``, or None when nothing matches (``--resume`` takes a run or an experiment)."""
    try:
        return get_experiment(store, ref)
    except UnknownNameError:
        return None


def list_experiments(store: Store, limit: int | None = 50) -> list[ExperimentRow]:
    with Session(store.engine) as session:
        query = select(ExperimentRow).order_by(ExperimentRow.created_at.desc(), ExperimentRow.id)
        if limit:
            query = query.limit(limit)
        rows = list(session.execute(query).scalars().all())
        session.expunge_all()
        return rows


def cell_run_counts(store: Store, experiment_ids: list[str]) -> dict[str, int]:
    """Experiment id -> how many of its cells have a run (one query for a listing)."""
    if not experiment_ids:
        return {}
    with store.engine.connect() as connection:
        rows = connection.execute(select(ExperimentRunRow.experiment_id, func.count())
                                  .where(ExperimentRunRow.experiment_id.in_(experiment_ids))
                                  .group_by(ExperimentRunRow.experiment_id)).all()
    return {experiment_id: count for experiment_id, count in rows}
