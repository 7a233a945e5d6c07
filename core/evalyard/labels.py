"""People's labels of a run's cases: stored in the ``labels`` table, sampled for labelling, and
read back as the human labels ``evalyard calibrate --run RUN`` compares the judge with.

A label is "yes" (the candidate is good: the judge should pass it) or "no". Labelling a case
again replaces its label (the table keeps the label in force, who gave it and when, not a
history). ``scorer`` is the judge the person was checking; "" labels the case for any scorer.

Everything here reads a bounded number of rows however large the run: the sample is a few LIMIT
queries (one per bin of the judge's value), and only labelled cases (a person's work, so
hundreds, not millions) are ever read whole.
"""

from __future__ import annotations

import getpass
import hashlib
from dataclasses import dataclass
from typing import Any, Iterator

from sqlalchemy import BigInteger, String, and_, cast, delete, exists, func, literal, or_, select, type_coerce

from .errors import InputError
from .scoring import Case
from .store import _json_dict, _json_list, chunked, insert_ignoring_duplicates
from .store.models import CandidateRow, CaseRow, LabelRow, ResultRow, utcnow

#: The labels a person gives (the keys y and n on the labelling page).
LABELS = ("yes", "no")
#: Bins of the judge's value the first pass samples evenly from.
DEFAULT_BINS = 5
#: The largest seed of the sampler (see ``_spread``).
MAX_SEED = 10_000
#: Rows per IN (...) query when reading labelled cases (well under every database's limit).
_IN_CHUNK = 500


def default_labeller() -> str:
    """The OS user, the labeller when none is named."""
    try:
        return getpass.getuser()
    except Exception:  # no user name in the environment or the password database
        return ""


def save_label(store, run_id: str, case_id: str, label: str, *, scorer: str = "", labeller: str = "") -> None:
    """Store (or replace) a person's label of one case, in one transaction."""
    if label not in LABELS:
        raise InputError(f"label {label!r}: expected one of {', '.join(LABELS)}")
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


def stored_labels(store, run_id: str, scorer: str | None = None) -> dict[str, dict[str, Any]]:
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


def labels_hash(labels: dict[str, dict[str, Any]]) -> str:
    """A content hash of stored labels (what a calibration saved from them records as its data hash)."""
    digest = hashlib.sha256()
    for case_id in sorted(labels):
        digest.update(f"{case_id}\0{labels[case_id]['label']}\n".encode("utf-8"))
    return digest.hexdigest()


def _cases(store, run, case_ids: list[str]) -> dict[str, Case]:
    """These cases of ``run`` (suite content plus the run's candidate), by id, in suite order."""
    cases, candidates = CaseRow.__table__.c, CandidateRow.__table__.c
    found: list[tuple[int, Case]] = []
    for chunk in chunked(case_ids, _IN_CHUNK):
        query = (select(cases.position, cases.case_id, cases.input, cases.reference,
                        type_coerce(cases.context, String), type_coerce(cases.metadata, String), candidates.text)
                 .join_from(CaseRow.__table__, CandidateRow.__table__,
                            (candidates.run_id == run.id) & (candidates.case_id == cases.case_id))
                 .where(cases.suite_id == run.suite_id, cases.case_id.in_(chunk)))
        with store.engine.connect() as connection:
            for position, case_id, text_in, reference, context, metadata, candidate in connection.execute(query):
                found.append((position, Case(id=case_id, input=text_in, candidate=candidate, reference=reference,
                                             context=_json_list(context), metadata=_json_dict(metadata))))
    return {case.id: case for _, case in sorted(found, key=lambda item: item[0])}


def labelled_cases(store, run_id: str, scorer: str | None = None,
                   field: str = "human_label") -> tuple[list[Case], str]:
    """The run's labelled cases, each with its stored label in ``metadata[field]``, in suite order,
    and the labels' content hash: a labelled data file made from the database."""
    run = store.get_run(run_id)
    labels = stored_labels(store, run.id, scorer)
    cases = list(_cases(store, run, list(labels)).values())
    for case in cases:
        case.metadata = {**case.metadata, field: labels[case.id]["label"]}
    return cases, labels_hash({c.id: labels[c.id] for c in cases})


# -- which cases to label ---------------------------------------------------------------------------

@dataclass
class Pick:
    case_id: str
    why: str  # "disagreement" or "bin 2/5" (the stratum it was drawn from)


def judge_says_yes(value: float | None, label: str | None, passed: bool | None, *, threshold: float | None,
                   higher_is_better: bool = True) -> bool | None:
    """The judge's verdict as yes/no: its own pass/fail, else its value against its threshold,
    else a yes/no-like label; None when it gave none of these."""
    if passed is not None:
        return bool(passed)
    if value is not None and threshold is not None:
        return value >= threshold if higher_is_better else value <= threshold
    if label is not None and label.lower() in ("yes", "pass", "true", "1", "no", "fail", "false", "0"):
        return label.lower() in ("yes", "pass", "true", "1")
    return None


def scorer_entry(run, scorer: str | None) -> dict[str, Any]:
    """The run's scorer named ``scorer`` (by name or qualified name), or its only one."""
    described = run.scorers or []
    names = ", ".join(s["name"] for s in described) or "none"
    if scorer is None:
        if len(described) != 1:
            raise InputError(f"run {run.id} has several scorers ({names}): choose one with --scorer")
        return described[0]
    for entry in described:
        if scorer in (entry["name"], entry.get("qualified")):
            return entry
    raise InputError(f"run {run.id} has no scorer {scorer!r} (it has: {names})")


def disagreements(store, run, entry: dict[str, Any]) -> Iterator[Pick]:
    """Labelled cases whose label the judge's verdict contradicts (oldest label first)."""
    labels = stored_labels(store, run.id, entry["name"])
    threshold = entry.get("threshold")
    threshold = threshold if isinstance(threshold, (int, float)) and not isinstance(threshold, bool) else None
    for chunk in chunked(list(labels), _IN_CHUNK):
        query = (select(ResultRow.case_id, ResultRow.value, ResultRow.label, ResultRow.passed)
                 .where(ResultRow.run_id == run.id, ResultRow.scorer == entry["name"], ResultRow.error.is_(None),
                        ResultRow.case_id.in_(chunk)))
        with store.engine.connect() as connection:
            verdicts = {row[0]: row[1:] for row in connection.execute(query)}
        for case_id in chunk:
            if case_id not in verdicts:
                continue
            says = judge_says_yes(*verdicts[case_id], threshold=threshold,
                                  higher_is_better=entry.get("higher_is_better", True))
            if says is not None and says != (labels[case_id]["label"] == "yes"):
                yield Pick(case_id, "disagreement")


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


def stratified(store, run, entry: dict[str, Any], size: int, *, bins: int = DEFAULT_BINS,
               seed: int = 0) -> list[Pick]:
    """Up to ``size`` unlabelled cases, drawn evenly from ``bins`` equal-width bins of the
    judge's value (one LIMIT query per bin; bins with too few cases leave their share to the
    others). Results with a label but no value are drawn evenly by label; results with neither
    give no verdict to check and are never offered."""
    name = entry["name"]
    scored = and_(ResultRow.run_id == run.id, ResultRow.scorer == name, ResultRow.error.is_(None))
    unlabelled = ~exists().where(LabelRow.run_id == run.id, LabelRow.case_id == ResultRow.case_id,
                                 or_(LabelRow.scorer == name, LabelRow.scorer == ""))
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
        drawn = [[Pick(case_id, why) for case_id in connection.execute(
                    select(ResultRow.case_id).where(scored, condition, unlabelled)
                    .order_by(_spread(seed), ResultRow.id).limit(size)).scalars()]
                 for why, condition in strata]
    picks: list[Pick] = []
    while len(picks) < size and any(drawn):  # round robin: the first k picks cover every bin
        for stratum in drawn:
            if stratum and len(picks) < size:
                picks.append(stratum.pop(0))
    return picks


def sample(store, run, entry: dict[str, Any], size: int, *, bins: int = DEFAULT_BINS, seed: int = 0) -> list[Pick]:
    """The cases to label, in order: the labelled cases the judge disagrees with first (a second
    pass reviews them), then up to ``size`` unlabelled cases stratified by the judge's value."""
    return [*disagreements(store, run, entry), *stratified(store, run, entry, size, bins=bins, seed=seed)]
