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

from .errors import InputError
from .scoring import Case
from .store import labels as label_rows
from .store.labels import MAX_SEED, stored_labels

#: The labels a person gives (the keys y and n on the labelling page).
LABELS = ("yes", "no")
#: Bins of the judge's value the first pass samples evenly from.
DEFAULT_BINS = 5
#: Rows per IN (...) query when reading labelled cases (well under every database's limit).
_IN_CHUNK = label_rows.IN_CHUNK


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
    label_rows.save_label(store, run_id, case_id, label, scorer=scorer, labeller=labeller)


def labels_hash(labels: dict[str, dict[str, Any]]) -> str:
    """A content hash of stored labels (what a calibration saved from them records as its data hash)."""
    digest = hashlib.sha256()
    for case_id in sorted(labels):
        digest.update(f"{case_id}\0{labels[case_id]['label']}\n".encode("utf-8"))
    return digest.hexdigest()


def _cases(store, run, case_ids: list[str]) -> dict[str, Case]:
    """These cases of ``run`` (suite content plus the run's candidate), by id, in suite order."""
    return label_rows.run_cases(store, run, case_ids)


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
    found = label_rows.verdicts(store, run.id, entry["name"], list(labels), errors=False)
    for case_id in labels:
        if case_id not in found:
            continue
        says = judge_says_yes(*found[case_id], threshold=threshold, higher_is_better=entry.get("higher_is_better", True))
        if says is not None and says != (labels[case_id]["label"] == "yes"):
            yield Pick(case_id, "disagreement")


def stratified(store, run, entry: dict[str, Any], size: int, *, bins: int = DEFAULT_BINS,
               seed: int = 0) -> list[Pick]:
    """Up to ``size`` unlabelled cases, drawn evenly from ``bins`` equal-width bins of the
    judge's value (one LIMIT query per bin; bins with too few cases leave their share to the
    others). Results with a label but no value are drawn evenly by label; results with neither
    give no verdict to check and are never offered."""
    drawn = [[Pick(case_id, why) for case_id in ids]
             for why, ids in label_rows.unlabelled_strata(store, run, entry["name"], size, bins=bins, seed=seed)]
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
