"""The formats IR people have: TREC run files and qrels, and ranx / pytrec_eval JSON.

- ``trec`` (``.trec``, ``.run``): a TREC run, one retrieved document a line,
  ``qid Q0 docid rank score tag`` (white space between columns). Each query is one case
  (``id`` = qid) whose ``retrieved`` holds ``{id, score}`` per document; retrieval scorers rank
  by score as trec_eval does, so the rank column is checked but not used. A query's lines come
  together (as trec_eval writes them): a query that comes back after another is refused, which
  lets a run of any size stream.
- ``run-json``: ``{qid: {docid: score}}``, as ranx and pytrec_eval take a run.
- Qrels (``--qrels FILE``, a suite's ``qrels:``): TREC qrels, ``qid iteration docid grade``,
  or with a ``.json`` ending ``{qid: {docid: grade}}``; they fill each case's ``relevant`` by its id.

Every bad line is one ``InputError`` naming the file, the line and the column.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterator

from .errors import InputError
from .scoring import Case
from .valid_text import check_text

RUN_COLUMNS = ("qid", "Q0", "docid", "rank", "score", "tag")
QREL_COLUMNS = ("qid", "iteration", "docid", "grade")


def _rows(path: str, names: tuple[str, ...]) -> Iterator[tuple[int, list[str]]]:
    """(line number, columns) of each line that is not blank, every one with ``names``' columns."""
    try:
        handle = open(path, encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None
    width = len(names)
    with handle:
        try:
            for number, line in enumerate(handle, start=1):
                parts = line.split()
                if len(parts) != width:
                    if not parts:
                        continue
                    raise InputError(f"expected {width} columns ({' '.join(names)}), got {len(parts)}", path=path,
                                     line=number, field=names[min(len(parts), width - 1)])
                # no check_text here: text decoded as strict UTF-8 cannot hold a lone surrogate (only
                # JSON's escapes can make one), and checking every line cost a sixth of a large run's time
                yield number, parts
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text ({exc.reason})", path=path) from None


def _number(text: str, path: str, line: int, field: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"expected a number, got {text!r}", path=path, line=line, field=field) from None
    if not math.isfinite(value):
        raise InputError(f"expected a finite number, got {text!r}", path=path, line=line, field=field)
    return value


def _grade(value: Any, path: str, line: int | None, field: str) -> int:
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            raise InputError(f"a grade is a whole number, not {value!r}", path=path, line=line, field=field) from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"a grade is a whole number, not {value!r}", path=path, line=line, field=field)
    return value


def iter_trec_run(path: str | Path, field_map: dict[str, str] | None = None) -> Iterator[tuple[Case, str]]:
    """A TREC run file, a case per query, streamed."""
    path = str(path)
    seen: set[str] = set()
    qid, first, docs, tag = None, 0, {}, None

    def case() -> tuple[Case, str]:
        retrieved = [{"id": doc, "score": score} for doc, score in docs.items()]
        return Case(id=qid, retrieved=retrieved, metadata={"run_tag": tag} if tag else {}), f"{path}:{first}"

    isfinite = math.isfinite
    for number, (q, _, doc, rank, score, run_tag) in _rows(path, RUN_COLUMNS):
        try:
            int(rank)  # the common case, at once: what int() reads is a whole number float() reads too
        except ValueError:
            rank_value = _number(rank, path, number, "rank")
            if rank_value != int(rank_value):
                raise InputError(f"expected a whole number, got {rank!r}", path=path, line=number, field="rank")
        try:
            value = float(score)
        except ValueError:
            value = _number(score, path, number, "score")  # raises, naming the line
        if not isfinite(value):
            value = _number(score, path, number, "score")
        if q != qid:
            if qid is not None:
                yield case()
            if q in seen:
                raise InputError(f"query {q!r} comes back after other queries: keep each query's lines together "
                                 "(sort the file by query)", path=path, line=number, field="qid")
            seen.add(q)
            qid, first, docs, tag = q, number, {}, run_tag
        if doc in docs:
            raise InputError(f"doc id {doc!r} is retrieved twice for query {q!r}", path=path, line=number,
                             field="docid")
        docs[doc] = value
    if qid is not None:
        yield case()
    elif not seen:
        raise InputError("no retrieved documents in the file", path=path)


def _unique_pairs(path: str):
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise InputError(f"key {key!r} appears twice in one object", path=path)
            out[key] = value
        return out

    return hook


def _json_file(path: str) -> dict[str, Any]:
    from .cases import read_text

    try:
        data = json.loads(read_text(path), object_pairs_hook=_unique_pairs(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON: {exc.msg} (column {exc.colno})", path=path, line=exc.lineno) from None
    except RecursionError:
        raise InputError("JSON nested too deeply", path=path, line=1) from None
    if not isinstance(data, dict):
        raise InputError("expected an object {qid: {docid: value}}", path=path, line=1)
    check_text(data, path=path, line=1)
    return data


def load_run_json(path: str | Path, field_map: dict[str, str] | None = None) -> tuple[list[Case], list[str]]:
    """``{qid: {docid: score}}`` (ranx, pytrec_eval): a case per query."""
    path = str(path)
    cases = []
    for qid, docs in _json_file(path).items():
        if not isinstance(docs, dict):
            raise InputError("expected an object {docid: score}", path=path, line=1, field=qid)
        retrieved = []
        for doc, score in docs.items():
            if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
                raise InputError(f"a score is a finite number, not {score!r}", path=path, line=1,
                                 field=f"{qid}.{doc}")
            retrieved.append({"id": doc, "score": float(score)})
        cases.append(Case(id=qid, retrieved=retrieved))
    if not cases:
        raise InputError("no queries in the file", path=path)
    return cases, [f"{path}:1"] * len(cases)


class Qrels:
    """The judgements of a qrels file, looked up by query id: ``qrels.get(qid)`` -> ``{docid: grade}``
    or None. A TREC qrels file is read once into a SQLite file of its own in a temporary folder
    (removed with this object), so a million judged queries take disk, not memory: the run's
    memory stays flat whatever the qrels' size. A JSON qrels file is one document, read whole."""

    BATCH = 10_000

    def __init__(self, path: str | Path) -> None:
        import sqlite3
        import tempfile
        import weakref

        self.path = str(path)
        self._json: dict[str, dict[str, int]] | None = None
        self._folder = tempfile.TemporaryDirectory(prefix="evalyard-qrels-")
        weakref.finalize(self, self._folder.cleanup)
        self._db = sqlite3.connect(str(Path(self._folder.name) / "qrels.db"), check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=OFF")
        self._db.execute("PRAGMA synchronous=OFF")
        self._db.execute("CREATE TABLE judged (qid TEXT, doc TEXT, grade INTEGER, line INTEGER)")
        weakref.finalize(self, self._db.close)
        if self.path.lower().endswith(".json"):
            self._json = self._read_json()
        else:
            self._read_trec()

    def _read_json(self) -> dict[str, dict[str, int]]:
        qrels = {}
        for qid, docs in _json_file(self.path).items():
            if not isinstance(docs, dict):
                raise InputError("expected an object {docid: grade}", path=self.path, line=1, field=qid)
            qrels[qid] = {doc: _grade(grade, self.path, 1, f"{qid}.{doc}") for doc, grade in docs.items()}
        if not qrels:
            raise InputError("no judgements in the file", path=self.path)
        return qrels

    def _read_trec(self) -> None:
        batch: list[tuple[str, str, int, int]] = []
        for number, (qid, _, doc, grade) in _rows(self.path, QREL_COLUMNS):
            batch.append((qid, doc, _grade(grade, self.path, number, "grade"), number))
            if len(batch) >= self.BATCH:
                self._db.executemany("INSERT INTO judged VALUES (?, ?, ?, ?)", batch)
                batch.clear()
        self._db.executemany("INSERT INTO judged VALUES (?, ?, ?, ?)", batch)
        if self._db.execute("SELECT 1 FROM judged LIMIT 1").fetchone() is None:
            raise InputError("no judgements in the file", path=self.path)
        self._db.execute("CREATE INDEX by_query ON judged (qid, doc, line)")
        # a document judged twice for one query: the first line that repeats one is named
        twice = self._db.execute(
            "SELECT a.qid, a.doc, MIN(b.line) AS again FROM judged a JOIN judged b ON a.qid = b.qid "
            "AND a.doc = b.doc AND a.line < b.line GROUP BY a.qid, a.doc ORDER BY again LIMIT 1").fetchone()
        if twice is not None:
            raise InputError(f"doc id {twice[1]!r} is judged twice for query {twice[0]!r}", path=self.path,
                             line=twice[2], field="docid")

    def get(self, qid: str) -> dict[str, int] | None:
        if self._json is not None:
            found = self._json.get(qid)
            return dict(found) if found is not None else None
        rows = self._db.execute("SELECT doc, grade FROM judged WHERE qid = ? ORDER BY line", (qid,)).fetchall()
        return dict(rows) if rows else None


def read_qrels(path: str | Path) -> Qrels:
    """The judgements of a qrels file: TREC's four columns, or JSON for a ``.json`` file."""
    return Qrels(path)


def with_qrels(cases: Iterator[tuple[Case, str]], qrels: Qrels) -> Iterator[tuple[Case, str]]:
    """Each case with its judgements as ``relevant`` (a case that has its own keeps them); a case
    the qrels do not judge keeps none, and a scorer that needs them refuses it by name."""
    for case, origin in cases:
        if case.relevant is None:
            judged = qrels.get(case.id)
            if judged is not None:
                case.relevant = judged
        yield case, origin
