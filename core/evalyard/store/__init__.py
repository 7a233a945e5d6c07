"""The run store: suites, cases, runs, candidates and results in any SQLAlchemy database.

SQLite under the user's data directory by default; ``--db`` / ``EVALYARD_DB``
take any SQLAlchemy URL (PostgreSQL is tested against a real server). The
schema is created and upgraded by Alembic migrations when the store opens.
"""

from __future__ import annotations

import json
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from sqlalchemy import create_engine, delete, event, func, insert, or_, select, update
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Session

from ..errors import EvalyardError, UnknownNameError
from ..retrieval import generated_context
from ..scoring import STRUCTURED_FIELDS, Case, Score
from ..suite import Suite
from .models import (CalibrationRow, CandidateRow, CaseRow, LabelRow, MediaRow, ModelCallRow, ResultRow, RunRow,
                     SuiteRow, utcnow)

__all__ = ["Store", "CalibrationRow", "CandidateRow", "CaseRow", "ModelCallRow", "ResultRow", "RunRow", "SuiteRow"]


#: Rows per transaction when storing a stream of cases.
WRITE_CHUNK = 5000


def chunked(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """Lists of up to ``size`` consecutive items."""
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _json_list(text: Any) -> list:
    if isinstance(text, (list, type(None))):  # a driver that decodes JSON itself (psycopg's jsonb)
        return list(text or [])
    return [] if text in ("[]", "null") else list(json.loads(text) or [])


def _json_dict(text: Any) -> dict:
    if isinstance(text, (dict, type(None))):
        return dict(text or {})
    return {} if text in ("{}", "null") else dict(json.loads(text) or {})


def dialogue_column(case: Case) -> dict[str, Any] | None:
    """What a case's ``dialogue`` column holds: its structured fields that are set (a dialogue, a
    retrieval), or None. One JSON column for both: a retrieval needed no migration."""
    fields = {name: getattr(case, name) for name in STRUCTURED_FIELDS if getattr(case, name) is not None}
    return fields or None


def dialogue_fields(stored: Any, generated: Any = None) -> dict[str, Any]:
    """A case's ``dialogue`` column's value (JSON text, or decoded by the driver) as Case keyword
    arguments; ``generated``, what a run generated besides the answer (its candidate's or an epoch's
    ``dialogue``: a conversation, a pipeline's retrieval), replaces the case's ``messages`` and
    ``retrieved``: scorers judge what the system said and retrieved."""
    fields = {} if stored is None or stored == "null" else dict(
        json.loads(stored) if isinstance(stored, str) else stored)
    if generated is not None and generated != "null":
        fields.update(json.loads(generated) if isinstance(generated, str) else generated)
    return fields


def run_cases_query(run_id: str):
    """A select of a run's cases (suite content joined with the run's candidates), one row each,
    as ``run_case`` reads it: callers add the suite, the order and the paging. Context, metadata
    and the dialogues come as their JSON text, decoded by ``run_case``: most are empty, and
    skipping the JSON type's decoder for those is a good share of reading a window."""
    from sqlalchemy import String, type_coerce

    cases, candidates = CaseRow.__table__.c, CandidateRow.__table__.c
    return (select(cases.position, cases.case_id, cases.input, cases.reference,
                   type_coerce(cases.context, String), type_coerce(cases.metadata, String), candidates.text,
                   type_coerce(cases.dialogue, String), type_coerce(candidates.dialogue, String))
            .join_from(CaseRow.__table__, CandidateRow.__table__,
                       (candidates.run_id == run_id) & (candidates.case_id == cases.case_id)))


def run_case(row: Any) -> Case:
    """One row of ``run_cases_query`` as the case a scorer sees."""
    _, case_id, text_in, reference, context, metadata, candidate, dialogue, generated = row
    made = dialogue_fields(None, generated)  # what the run generated besides the answer
    fields = {"context": _json_list(context), **dialogue_fields(dialogue), **made}
    if "retrieved" in made:  # a pipeline's retrieval: the context judges read
        fields = generated_context(fields)
    return Case(id=case_id, input=text_in, candidate=candidate, reference=reference,
                metadata=_json_dict(metadata), **fields)


def database_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is the database's failure (a file locked past the busy timeout, a server
    gone): the CLI turns it into one line. Known here, so no module above names the driver."""
    from sqlalchemy.exc import SQLAlchemyError

    return isinstance(exc, SQLAlchemyError) or type(exc).__module__.startswith("sqlalchemy")


def _normalise_url(url: str) -> str:
    """Accept a bare file path as a SQLite database."""
    if "://" not in url:
        return f"sqlite:///{Path(url).expanduser()}"
    return url


#: How long a SQLite connection waits for another process's write (or schema) lock before its
#: statement fails with "database is locked". SQLite has one writer at a time; a run's write
#: transactions are short (one batch of results), so writers take turns well within this.
SQLITE_BUSY_TIMEOUT_S = 30


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    # The busy timeout first: every statement after it, journal_mode=WAL included, then waits
    # for a lock another process holds instead of failing at once.
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_S * 1000}")
    # WAL keeps readers (runs list) working during a run; NORMAL sync is still crash-safe for
    # committed transactions in WAL mode. WAL is a property of the file, kept once set, so only
    # the first opening of a new file switches it; switching needs the file to itself.
    if cursor.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        _set_wal(cursor)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _set_wal(cursor) -> None:
    """Switch a new file to WAL; a concurrent first opening may hold it, so retry until the timeout.

    Changing the journal mode needs the file to itself, and when many processes open one new
    file at once it can fail with "database is locked" in spite of the busy timeout, before the
    timeout has passed: 16 processes opening a new file together, 30 times, saw it in 7 of 480
    openings without this retry and in none of 960 with it.
    """
    import sqlite3
    import time

    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_S
    delay = 0.005
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


#: The newest migration's revision id (a test checks it against the migration scripts).
#: Knowing it lets an up-to-date database open without importing Alembic, which is slow to import.
HEAD_REVISION = "0012_media"

#: The PostgreSQL advisory-lock key that processes creating or upgrading evalyard's schema take
#: in turn: a fixed bigint no other application on the server is likely to use ("evalyard" in
#: ASCII, 0x6576616c79617264).
_SCHEMA_LOCK_KEY = int.from_bytes(b"evalyard", "big")


def _current_revision(connection: Connection) -> str | None:
    from sqlalchemy import inspect, text

    if not inspect(connection).has_table("alembic_version"):
        return None
    return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


def _create_newest_schema(connection: Connection) -> None:
    """Create a brand-new database's tables from the models and stamp the head revision.

    This is Alembic's documented "create_all, then stamp" start for new databases; it
    skips importing Alembic and replaying every migration on each first run. Tests
    check that the models and the migration chain build the same schema.
    """
    from sqlalchemy import text

    from .models import SQLModel

    SQLModel.metadata.create_all(connection)
    connection.execute(text(
        "CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, "
        "CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))"
    ))
    connection.execute(text("INSERT INTO alembic_version (version_num) VALUES (:v)"), {"v": HEAD_REVISION})


def _is_empty(connection: Connection) -> bool:
    from sqlalchemy import inspect

    return not inspect(connection).get_table_names()


@contextmanager
def _schema_lock(engine: Engine) -> Iterator[Connection]:
    """A connection in a transaction that holds the database's schema lock until it commits.

    Exactly one process at a time checks and creates or upgrades the schema; the others wait
    here and then find it done. PostgreSQL: a transaction-level advisory lock (released by the
    commit or rollback, so a crashed process never leaves it held), and the DDL commits with it.
    SQLite: ``BEGIN EXCLUSIVE``, the file's write lock, waited for under the busy timeout. Other
    databases get no lock: a first opening by several processes at once may fail there, and a
    second attempt finds the schema made.
    """
    from sqlalchemy import text

    with engine.connect() as connection:
        if engine.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SCHEMA_LOCK_KEY})
        elif engine.dialect.name == "sqlite":
            # The sqlite3 module begins no transaction before DDL by itself; this one is explicit,
            # and its commit and rollback go through the driver as usual.
            connection.exec_driver_sql("BEGIN EXCLUSIVE")
        yield connection
        connection.commit()


def migrate(engine: Engine, *, create_new_directly: bool = True) -> None:
    """Bring the schema to the newest migration (a new, empty database is created directly).

    Safe when many processes open one new or old database at once: the check is repeated
    under the schema lock, so one of them does the work and the others see it done.
    """
    with engine.connect() as connection:
        if _current_revision(connection) == HEAD_REVISION:
            return  # the usual case: no lock, no Alembic import
    with _schema_lock(engine) as connection:
        current = _current_revision(connection)
        if current == HEAD_REVISION:
            return  # another process made it while this one waited for the lock
        if current is None and create_new_directly and _is_empty(connection):
            _create_newest_schema(connection)
            return
        _upgrade_with_alembic(connection)


def _upgrade_with_alembic(connection: Connection) -> None:
    """Run the migrations from the database's revision to the head, inside the caller's transaction."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(Path(__file__).resolve().parent.parent / "migrations"))
    config.attributes["connection"] = connection
    command.upgrade(config, "head")


def insert_ignoring_duplicates(connection: Connection, table: Any, rows: list[dict[str, Any]],
                               keys: Sequence[str]) -> None:
    """Insert ``rows`` into ``table``, skipping each row whose ``keys`` are already stored.

    For rows that several processes may insert at once (a new suite's cases, a resumed run's
    results, a batch retried after its first attempt committed): ``keys`` are the columns of one
    of the table's unique constraints, and a row another transaction inserted first is left as it
    is instead of failing the batch. SQLite and PostgreSQL: ``INSERT ... ON CONFLICT (keys) DO
    NOTHING`` (PostgreSQL waits for the other transaction and skips the row once it commits).
    ``table``: a model class (rows keyed by its attribute names, e.g. ``case_metadata``) or a
    Table (rows keyed by column keys).

    One ``executemany`` of plain tuples through the driver, each value converted by its column
    type's own bind processor (JSON, timestamps) as SQLAlchemy would: its generic per-row path
    was most of the cost of storing a result.
    """
    if not rows:
        return
    table, rows, keys = _by_column_keys(table, rows, keys)
    dialect = connection.dialect
    if dialect.name not in ("sqlite", "postgresql"):
        _insert_ignoring_duplicates_portably(connection, table, rows, keys)
        return
    names = list(rows[0])
    sql, processors = _insert_statement(dialect, table, tuple(names), tuple(keys))
    columns = [[row[name] for row in rows] for name in names]
    for i, process in enumerate(processors):
        if process is not None:
            columns[i] = _processed(columns[i], process)
    connection.exec_driver_sql(sql, list(zip(*columns)))


def _processed(values: list[Any], process) -> list[Any]:
    """A column's values through its bind processor; a value repeated by identity (a batch's one
    timestamp) and an empty list or dict (most cases' context and metadata) are converted once."""
    out, last, last_out = [], object(), None
    empty: dict[type, Any] = {}
    for value in values:
        if value is not last:
            kind = type(value)
            if (kind is list or kind is dict) and not value:
                if kind not in empty:
                    empty[kind] = process(value)
                last_out = empty[kind]
            else:
                last_out = process(value)
            last = value
        out.append(last_out)
    return out


_STATEMENTS: dict[tuple, tuple[str, list]] = {}


def _insert_statement(dialect, table, names: tuple[str, ...], keys: tuple[str, ...]) -> tuple[str, list]:
    """The SQL and per-column bind processors of an insert-or-skip, made once per shape."""
    cache_key = (dialect.name, dialect.paramstyle, table.name, names, keys)
    if cache_key not in _STATEMENTS:
        marker = "?" if dialect.paramstyle == "qmark" else "%s"
        quote = dialect.identifier_preparer.quote
        sql = (f"INSERT INTO {quote(table.name)} ({', '.join(quote(n) for n in names)}) "
               f"VALUES ({', '.join(marker for _ in names)}) "
               f"ON CONFLICT ({', '.join(quote(k) for k in keys)}) DO NOTHING")
        processors = [table.c[name].type._cached_bind_processor(dialect) for name in names]
        _STATEMENTS[cache_key] = (sql, processors)
    return _STATEMENTS[cache_key]


def _by_column_keys(table: Any, rows: list[dict[str, Any]], keys: Sequence[str]):
    """A model class's Table, with rows and keys renamed from attribute names to column keys."""
    from sqlalchemy import inspect
    from sqlalchemy.orm import Mapper

    mapper = inspect(table, raiseerr=False)
    if not isinstance(mapper, Mapper):
        return table, rows, keys
    names = {attr.key: attr.columns[0].key for attr in mapper.column_attrs}
    if all(names.get(k, k) == k for k in rows[0]) and all(names.get(k, k) == k for k in keys):
        return mapper.local_table, rows, keys
    return (mapper.local_table, [{names.get(k, k): v for k, v in row.items()} for row in rows],
            [names.get(k, k) for k in keys])


def _insert_ignoring_duplicates_portably(connection: Connection, table: Any, rows: list[dict[str, Any]],
                                         keys: Sequence[str]) -> None:
    """Other databases (no ON CONFLICT): the batch at once; if it clashes, row by row, each in a
    savepoint, skipping a row that clashed because its keys are stored and re-raising any other
    integrity error (a missing parent row, a NULL)."""
    from sqlalchemy.exc import IntegrityError

    try:
        with connection.begin_nested():
            connection.execute(insert(table), rows)
        return
    except IntegrityError:
        pass
    for row in rows:
        try:
            with connection.begin_nested():
                connection.execute(insert(table), [row])
        except IntegrityError:
            stored = connection.execute(
                select(func.count()).select_from(table).where(*(table.c[k] == row[k] for k in keys))
            ).scalar_one()
            if not stored:
                raise


class Store:
    """The run history in one database. ``url``: any SQLAlchemy URL, or a SQLite file path
    (the application decides the default: ``Settings.database_url``)."""

    def __init__(self, url: str) -> None:
        self.url = _normalise_url(url)
        if self.url.startswith("sqlite:///") and not self.url.startswith("sqlite:///:memory:"):
            Path(self.url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
        try:
            self.engine = create_engine(self.url)
        except Exception as exc:  # bad URL, missing driver
            raise EvalyardError(f"cannot open database {self.url!r}: {exc}") from None
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        try:
            migrate(self.engine)
        except EvalyardError:
            raise
        except Exception as exc:
            reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]  # one line, the driver's words
            raise EvalyardError(f"cannot open database {self.url!r}: {reason}") from None

    def close(self) -> None:
        self.engine.dispose()

    # -- suites --------------------------------------------------------
    def ensure_suite(self, suite: Suite) -> int:
        """The id of this suite version, storing it (and its cases) the first time it is seen."""
        suite_id = self.suite_id(suite.name, suite.version, description=suite.description, source=suite.source,
                                 case_count=suite.case_count)
        if self.stored_case_count(suite_id) < suite.case_count:
            self.store_cases(suite_id, None, suite.iter_cases(), suite_cases=True)
        return suite_id

    def stored_case_count(self, suite_id: int) -> int:
        with self.engine.connect() as connection:
            return connection.execute(
                select(func.count()).select_from(CaseRow).where(CaseRow.suite_id == suite_id)).scalar_one()

    def store_cases(self, suite_id: int, run_id: str | None, pairs: Iterable[tuple[Case, Any]], *,
                    suite_cases: bool, first_position: int = 0) -> None:
        """Store a stream of cases, one transaction per chunk: the suite's rows (when
        ``suite_cases``; the first at ``first_position``) and the run's candidates (when
        ``run_id``). Rows already there are left alone, so several processes storing one new
        suite, or a resumed run storing the rest of its cases, all succeed and keep every row once."""
        position = first_position
        for chunk in chunked(pairs, WRITE_CHUNK):
            case_rows, candidate_rows, media = [], [], {}
            for case, _ in chunk:
                if case.media:
                    media.update(case.media)
                if suite_cases:
                    case_rows.append({"suite_id": suite_id, "position": position, "case_id": case.id,
                                      "input": case.input, "reference": case.reference, "context": case.context,
                                      "metadata": case.metadata, "dialogue": dialogue_column(case)})
                if run_id is not None:
                    candidate_rows.append({"run_id": run_id, "case_id": case.id, "text": case.candidate})
                position += 1
            with self.engine.begin() as connection:
                if media:  # with the cases naming them, in their transaction
                    self._store_media(connection, media)
                if case_rows:
                    insert_ignoring_duplicates(connection, CaseRow.__table__, case_rows, ("suite_id", "case_id"))
                if candidate_rows:
                    insert_ignoring_duplicates(connection, CandidateRow.__table__, candidate_rows,
                                               ("run_id", "case_id"))

    @staticmethod
    def _store_media(connection: Connection, media: dict[str, Any]) -> None:
        """Media not stored yet (``evalyard.media.Media`` by sha256): each once, whatever number of
        cases, suites and runs name it. The hashes already there are asked first, so the bytes of
        media seen before are not even sent to the database again."""
        table = MediaRow.__table__
        known = set()
        hashes = sorted(media)
        for start in range(0, len(hashes), 500):
            known.update(connection.execute(select(table.c.sha256).where(
                table.c.sha256.in_(hashes[start:start + 500]))).scalars())
        now = utcnow()
        rows = [{"sha256": sha, "media_type": m.type, "size": len(m.data), "data": m.data, "created_at": now}
                for sha, m in media.items() if sha not in known]
        insert_ignoring_duplicates(connection, table, rows, ("sha256",))

    def media(self, sha256: str) -> tuple[str, bytes]:
        """(type, bytes) of stored media; EvalyardError when the store has none by that hash."""
        table = MediaRow.__table__
        with self.engine.connect() as connection:
            row = connection.execute(select(table.c.media_type, table.c.data).where(table.c.sha256 == sha256)).first()
        if row is None:
            raise EvalyardError(f"no media with sha256 {sha256} in the database (its case was not stored)")
        return row[0], bytes(row[1])

    def media_bytes(self) -> int:
        """The bytes of every stored media (what a run over media seen before does not add to)."""
        with self.engine.connect() as connection:
            return connection.execute(select(func.coalesce(func.sum(MediaRow.__table__.c.size), 0))).scalar_one()

    def suite_id(self, name: str, version: str, *, description: str = "", source: str = "",
                 case_count: int = 0) -> int:
        """The id of suite ``name`` at ``version``, inserting its row if it is not stored yet.

        Insert-or-get: any number of processes may ask for the same new suite at once; one row
        is inserted, and every one of them gets its id.
        """
        query = select(SuiteRow.id).where(SuiteRow.name == name, SuiteRow.version == version)
        with self.engine.begin() as connection:
            found = connection.execute(query).scalar()  # a known suite: no write, no lock waited for
            if found is not None:
                return found
            insert_ignoring_duplicates(connection, SuiteRow, [{
                "name": name, "version": version, "description": description, "source": source,
                "case_count": case_count, "created_at": utcnow(),
            }], keys=("name", "version"))
            return connection.execute(query).scalar_one()

    # -- runs ----------------------------------------------------------
    def create_run(
        self, suite_id: int, cases: Iterable[Case] | None, *, name: str, scorers: list[dict[str, Any]],
        versions: dict[str, Any], source: str, generator: dict[str, Any] | None = None,
        settings: dict[str, Any] | None = None,
    ) -> str:
        """A new run's row, and its candidates for ``cases`` (None: stored later with ``store_cases``)."""
        run_id = uuid.uuid4().hex[:12]
        with Session(self.engine) as session:
            session.add(RunRow(id=run_id, name=name or run_id, suite_id=suite_id, scorers=scorers,
                               versions=versions, source=source, generator=generator, settings=settings))
            session.commit()
        if cases is not None:
            self.store_cases(suite_id, run_id, ((c, None) for c in cases), suite_cases=False)
        return run_id

    def candidate_count(self, run_id: str) -> int:
        with self.engine.connect() as connection:
            return connection.execute(
                select(func.count()).select_from(CandidateRow).where(CandidateRow.run_id == run_id)).scalar_one()

    def get_run(self, run_ref: str) -> RunRow:
        """A run by id, unique id prefix, run name, or suite name (the newest such run)."""
        with Session(self.engine) as session:
            row = session.get(RunRow, run_ref)
            if row is None:
                matches = session.execute(
                    select(RunRow).where(RunRow.id.startswith(run_ref)).limit(2)
                ).scalars().all() if run_ref else []
                if len(matches) == 1:
                    row = matches[0]
                elif len(matches) > 1:
                    raise UnknownNameError(f"run id prefix {run_ref!r} is ambiguous")
            if row is None:
                row = session.execute(
                    select(RunRow).where(RunRow.name == run_ref).order_by(RunRow.created_at.desc()).limit(1)
                ).scalars().first()
            if row is None:  # a suite name: its newest run
                row = session.execute(
                    select(RunRow).join(SuiteRow, RunRow.suite_id == SuiteRow.id).where(SuiteRow.name == run_ref)
                    .order_by(RunRow.created_at.desc()).limit(1)
                ).scalars().first()
            if row is None:
                raise UnknownNameError(f"no run {run_ref!r} in {self.url}")
            session.expunge(row)
            return row

    def list_runs(self, limit: int | None = 50, suite: str | None = None) -> list[tuple[RunRow, SuiteRow]]:
        with Session(self.engine) as session:
            query = select(RunRow, SuiteRow).join(SuiteRow, RunRow.suite_id == SuiteRow.id)
            if suite:
                query = query.where(SuiteRow.name == suite)
            query = query.order_by(RunRow.created_at.desc(), RunRow.id)
            if limit:
                query = query.limit(limit)
            rows = [(r, s) for r, s in session.execute(query).all()]
            session.expunge_all()
            return rows

    def suite_of(self, run: RunRow) -> SuiteRow:
        with Session(self.engine) as session:
            row = session.get(SuiteRow, run.suite_id)
            session.expunge(row)
            return row

    def run_cases(self, run: RunRow) -> list[Case]:
        """A run's cases (suite content plus this run's candidates), in suite order, in one list."""
        return [case for window in self.iter_run_cases(run.id, run.suite_id) for case in window]

    def iter_run_cases(self, run_id: str, suite_id: int, *, window: int = 1000,
                       missing_candidates: bool = False) -> Iterator[list[Case]]:
        """A run's cases in suite order, ``window`` at a time (keyset paging on the position
        index: each window costs the same however far into a suite of millions it is).
        ``missing_candidates``: only the cases whose candidate is still to be generated."""
        cases, candidates = CaseRow.__table__.c, CandidateRow.__table__.c
        query = run_cases_query(run_id).where(cases.suite_id == suite_id).order_by(cases.position).limit(window)
        if missing_candidates:
            query = query.where(candidates.text.is_(None), candidates.error.is_(None))
        last = -1
        while True:
            with self.engine.connect() as connection:
                rows = connection.execute(query.where(cases.position > last)).all()
            if not rows:
                return
            last = rows[-1][0]
            yield [run_case(row) for row in rows]

    def write_candidates(self, run_id: str, rows: list[dict[str, Any]]) -> None:
        """Store generated candidates (``case_id``, ``text``, ``details``, ``error``) in one transaction."""
        if not rows:
            return
        with self.engine.begin() as connection:
            for row in rows:
                connection.execute(
                    update(CandidateRow)
                    .where(CandidateRow.run_id == run_id, CandidateRow.case_id == row["case_id"])
                    .values(text=row.get("text"), details=row.get("details"), error=row.get("error"),
                            dialogue=row.get("dialogue"))
                )

    def generation_counts(self, run_id: str) -> dict[str, int]:
        """How many of a run's candidates its generator made (or tried to), and how many failed."""
        query = select(CandidateRow.details, CandidateRow.error).where(CandidateRow.run_id == run_id)
        generated = errors = 0
        with self.engine.connect() as connection:  # streamed: details may be JSON null, which SQL can't tell
            for details, error in connection.execution_options(yield_per=10_000).execute(query):
                generated += details is not None or bool(error)
                errors += bool(error)
        return {"generated": generated, "errors": errors}

    def candidates(self, run_id: str) -> dict[str, CandidateRow]:
        with Session(self.engine) as session:
            rows = session.execute(select(CandidateRow).where(CandidateRow.run_id == run_id)).scalars().all()
            session.expunge_all()
            return {r.case_id: r for r in rows}

    def set_status(self, run_id: str, status: str, totals: dict[str, Any] | None = None) -> None:
        with Session(self.engine) as session:
            row = session.get(RunRow, run_id)
            row.status = status
            if totals is not None:
                row.totals = totals
            row.finished_at = utcnow() if status != "running" else None
            session.add(row)
            session.commit()

    def delete_run(self, run_id: str) -> None:
        from .models import ReviewRow, ReviewSessionRow, TrialOutputRow, TrialRow

        sessions = select(ReviewSessionRow.id).where(or_(ReviewSessionRow.base_run == run_id,
                                                         ReviewSessionRow.new_run == run_id))
        with Session(self.engine) as session:
            session.execute(delete(TrialRow).where(TrialRow.run_id == run_id))
            session.execute(delete(TrialOutputRow).where(TrialOutputRow.run_id == run_id))
            session.execute(delete(ResultRow).where(ResultRow.run_id == run_id))
            session.execute(delete(LabelRow).where(LabelRow.run_id == run_id))
            # the review sessions of the run and their verdicts (store.reviews imports this module)
            session.execute(delete(ReviewRow).where(ReviewRow.session_id.in_(sessions)))
            session.execute(delete(ReviewSessionRow).where(ReviewSessionRow.id.in_(sessions)))
            session.execute(delete(CandidateRow).where(CandidateRow.run_id == run_id))
            session.execute(delete(RunRow).where(RunRow.id == run_id))
            session.commit()

    # -- results -------------------------------------------------------
    def done_pairs(self, run_id: str, case_ids: Iterable[str] | None = None) -> set[tuple[str, str]]:
        """(case, scorer) pairs with a result: of the whole run, or of these cases only."""
        query = select(ResultRow.case_id, ResultRow.scorer).where(ResultRow.run_id == run_id)
        if case_ids is not None:
            query = query.where(ResultRow.case_id.in_(list(case_ids)))
        with self.engine.connect() as connection:
            return {(case_id, scorer) for case_id, scorer in connection.execute(query).all()}

    def write_results(self, run_id: str, rows: list[dict[str, Any]]) -> None:
        """Insert one batch of results in one transaction: all of the batch is kept, or none. A
        result already stored for a (case, scorer) stays (a batch retried after its first
        attempt committed adds nothing)."""
        if not rows:
            return
        now = utcnow()
        for row in rows:
            row["run_id"] = run_id
            row.setdefault("created_at", now)
        with self.engine.begin() as connection:
            insert_ignoring_duplicates(connection, ResultRow.__table__, rows, ("run_id", "case_id", "scorer"))

    def results(self, run_id: str, scorer: str | None = None) -> Iterator[ResultRow]:
        with Session(self.engine) as session:
            query = select(ResultRow).where(ResultRow.run_id == run_id)
            if scorer:
                query = query.where(ResultRow.scorer == scorer)
            query = query.order_by(ResultRow.id)
            for row in session.execute(query.execution_options(yield_per=1000)).scalars():
                yield row

    def scores(self, run_id: str, scorer: str) -> list[Score]:
        """One scorer's results as Scores (what ``Scorer.aggregate`` receives), in order."""
        query = (select(ResultRow.value, ResultRow.label, ResultRow.passed, ResultRow.details, ResultRow.error,
                        ResultRow.usage)
                 .where(ResultRow.run_id == run_id, ResultRow.scorer == scorer).order_by(ResultRow.case_id))
        with Session(self.engine) as session:
            return [Score(value=v, label=lb, passed=p, details=d or {}, error=e, usage=u)
                    for v, lb, p, d, e, u in session.execute(query).all()]

    def outcomes(self, run_id: str, scorer: str) -> Iterator[Any]:
        """(value, label, passed, error) of one scorer's results, by case id: what a summary needs,
        streamed (plain rows from a column select, fetched in chunks: no ORM objects, no decoding
        of details, no list of a million rows). By case id, not by insertion: results are stored
        in the order their batches finish, and the seeded bootstrap resamples positions, so in
        insertion order the same values gave another interval from one run to the next."""
        query = (select(ResultRow.value, ResultRow.label, ResultRow.passed, ResultRow.error)
                 .where(ResultRow.run_id == run_id, ResultRow.scorer == scorer).order_by(ResultRow.case_id))
        with self.engine.connect() as connection:
            yield from connection.execution_options(yield_per=10_000).execute(query)

    def summary(self, run_id: str, scorer: str) -> dict[str, Any]:
        """``evalyard.analysis.stats.summarize`` of one scorer's stored results. Up to the bootstrap limit
        it reads them (the same figures as ever); past it the database computes the counts,
        moments and labels, so a million results cost a few aggregate queries, not a million
        Python rows."""
        from sqlalchemy import and_

        from ..analysis.stats import BOOTSTRAP_LIMIT, from_moments, summarize

        mine = and_(ResultRow.run_id == run_id, ResultRow.scorer == scorer)
        ok = and_(mine, ResultRow.error.is_(None))
        with self.engine.connect() as connection:
            scored = connection.execute(
                select(func.count(ResultRow.value)).where(ok)).scalar_one()
            if scored <= BOOTSTRAP_LIMIT:
                return summarize(self.outcomes(run_id, scorer))
            count, errors, judged, passed, mean, low, high = connection.execute(select(
                func.count(), func.count(ResultRow.error), func.count(ResultRow.passed),
                func.count(ResultRow.passed).filter(ResultRow.passed.is_(True)),
                func.avg(ResultRow.value).filter(ResultRow.error.is_(None)),
                func.min(ResultRow.value).filter(ResultRow.error.is_(None)),
                func.max(ResultRow.value).filter(ResultRow.error.is_(None)),
            ).where(mine)).one()
            deviation = ResultRow.value - float(mean)
            squares = connection.execute(select(func.sum(deviation * deviation)).where(ok)).scalar_one()
            labels = dict(connection.execute(
                select(ResultRow.label, func.count()).where(ok, ResultRow.label.is_not(None))
                .group_by(ResultRow.label)).all())
        # pass counts exclude errors, as summarize's do (an error's passed is always NULL)
        return from_moments(count=count, errors=errors, scored=scored, mean=float(mean),
                            squares=float(squares), low=low, high=high, judged=judged, passed=passed,
                            labels=labels)

    def result_count(self, run_id: str) -> int:
        with Session(self.engine) as session:
            return session.execute(select(func.count()).select_from(ResultRow).where(ResultRow.run_id == run_id)).scalar_one()

    def case_order(self, run: RunRow) -> dict[str, int]:
        with Session(self.engine) as session:
            return dict(session.execute(
                select(CaseRow.case_id, CaseRow.position).where(CaseRow.suite_id == run.suite_id)
            ).all())

    # -- calibrations --------------------------------------------------
    def save_calibration(self, *, fingerprint: str, scorer: str, data_path: str, data_hash: str,
                         run_id: str | None, n: int, report: dict[str, Any]) -> int:
        with Session(self.engine) as session:
            row = CalibrationRow(fingerprint=fingerprint, scorer=scorer, data_path=data_path, data_hash=data_hash,
                                 run_id=run_id, n=n, report=report)
            session.add(row)
            session.commit()
            return row.id

    def calibration(self, fingerprint: str) -> CalibrationRow | None:
        """The newest saved calibration of the judge with this fingerprint, if any."""
        with Session(self.engine) as session:
            row = session.execute(
                select(CalibrationRow).where(CalibrationRow.fingerprint == fingerprint)
                .order_by(CalibrationRow.created_at.desc(), CalibrationRow.id.desc()).limit(1)
            ).scalars().first()
            if row is not None:
                session.expunge(row)
            return row

    def calibration_by_id(self, calibration_id: int) -> CalibrationRow | None:
        with Session(self.engine) as session:
            row = session.get(CalibrationRow, calibration_id)
            if row is not None:
                session.expunge(row)
            return row
