"""People's labels of a run's cases, as values: which verdict is "yes", which labelled cases the
judge contradicts, and the round robin over strata that picks the cases to label. The labels
are stored and read in ``store.labels``; ``figures.labels`` samples and reads them for ``evalyard
label`` and ``evalyard calibrate --run RUN``.

A label is "yes" (the candidate is good: the judge should pass it) or "no". Labelling a case
again replaces its label (the table keeps the label in force, who gave it and when, not a
history). ``scorer`` is the judge the person was checking; "" labels the case for any scorer.

"""

from __future__ import annotations

import getpass
import hashlib
from dataclasses import dataclass
from typing import Any, Iterator

from ..errors import InputError

#: The labels a person gives (the keys y and n on the labelling page).
LABELS = ("yes", "no")
#: Bins of the judge's value the first pass samples evenly from.
DEFAULT_BINS = 5


def default_labeller() -> str:
    """The OS user, the labeller when none is named."""
    try:
        return getpass.getuser()
    except Exception:  # no user name in the environment or the password database
        return ""


def check_label(label: str) -> None:
    if label not in LABELS:
        raise InputError(f"label {label!r}: expected one of {', '.join(LABELS)}")


def labels_hash(labels: dict[str, dict[str, Any]]) -> str:
    """A content hash of stored labels (what a calibration saved from them records as its data hash)."""
    digest = hashlib.sha256()
    for case_id in sorted(labels):
        digest.update(f"{case_id}\0{labels[case_id]['label']}\n".encode("utf-8"))
    return digest.hexdigest()


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


def disagreements(labels: dict[str, dict[str, Any]], verdicts: dict[str, tuple], entry: dict[str, Any]) -> Iterator[Pick]:
    """Labelled cases (``labels``, oldest first) whose label the judge's verdict (value, label,
    passed by case id) contradicts, in the labels' order."""
    threshold = entry.get("threshold")
    threshold = threshold if isinstance(threshold, (int, float)) and not isinstance(threshold, bool) else None
    for case_id in labels:
        if case_id not in verdicts:
            continue
        says = judge_says_yes(*verdicts[case_id], threshold=threshold, higher_is_better=entry.get("higher_is_better", True))
        if says is not None and says != (labels[case_id]["label"] == "yes"):
            yield Pick(case_id, "disagreement")


def round_robin(strata: list[tuple[str, list[str]]], size: int) -> list[Pick]:
    """Up to ``size`` picks from (stratum name, case ids) lists, one from each stratum in turn, so
    the first k picks cover every stratum and a stratum with too few cases leaves its share to
    the others."""
    drawn = [[Pick(case_id, why) for case_id in ids] for why, ids in strata]
    picks: list[Pick] = []
    while len(picks) < size and any(drawn):
        for stratum in drawn:
            if stratum and len(picks) < size:
                picks.append(stratum.pop(0))
    return picks
