"""People's labels of a run's cases (``evalyard label``, ``calibrate --run``): stored and read
through ``store.labels``, checked and sampled by ``analysis.labels``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from ..analysis import labels

if TYPE_CHECKING:
    from ..store import Store
    from ..store.models import RunRow


def save_label(store: "Store", run_id: str, case_id: str, label: str, *, scorer: str = "",
               labeller: str = "") -> None:
    """Store (or replace) a person's yes/no label of one case."""
    from ..store.labels import save_label as save

    labels.check_label(label)
    save(store, run_id, case_id, label, scorer=scorer, labeller=labeller)


def stored_labels(store: "Store", run_id: str, scorer: str | None = None) -> dict[str, dict[str, Any]]:
    """Per labelled case: its label, labeller and time (``store.labels.stored_labels``)."""
    from ..store.labels import stored_labels as read

    return read(store, run_id, scorer)


def labelled_cases(store: "Store", run_id: str, scorer: str | None = None,
                   field: str = "human_label") -> tuple[list[Any], str]:
    """The run's labelled cases, each with its stored label in ``metadata[field]``, in suite order,
    and the labels' content hash: a labelled data file made from the database."""
    from ..store.labels import run_cases

    run = store.get_run(run_id)
    found = stored_labels(store, run.id, scorer)
    cases = list(run_cases(store, run, list(found)).values())
    for case in cases:
        case.metadata = {**case.metadata, field: found[case.id]["label"]}
    return cases, labels.labels_hash({c.id: found[c.id] for c in cases})


def disagreements(store: "Store", run: "RunRow", entry: dict[str, Any]) -> Iterator[labels.Pick]:
    """Labelled cases whose label the judge's verdict contradicts (oldest label first)."""
    from ..store.labels import verdicts

    found = stored_labels(store, run.id, entry["name"])
    return labels.disagreements(found, verdicts(store, run.id, entry["name"], list(found), errors=False), entry)


def stratified(store: "Store", run: "RunRow", entry: dict[str, Any], size: int, *, bins: int = labels.DEFAULT_BINS,
               seed: int = 0) -> list[labels.Pick]:
    """Up to ``size`` unlabelled cases, drawn evenly from ``bins`` equal-width bins of the
    judge's value (one LIMIT query per bin; bins with too few cases leave their share to the
    others). Results with a label but no value are drawn evenly by label; results with neither
    give no verdict to check and are never offered."""
    from ..store.labels import unlabelled_strata

    return labels.round_robin(unlabelled_strata(store, run, entry["name"], size, bins=bins, seed=seed), size)


def sample(store: "Store", run: "RunRow", entry: dict[str, Any], size: int, *, bins: int = labels.DEFAULT_BINS,
           seed: int = 0) -> list[labels.Pick]:
    """The cases to label, in order: the labelled cases the judge disagrees with first (a second
    pass reviews them), then up to ``size`` unlabelled cases stratified by the judge's value."""
    return [*disagreements(store, run, entry), *stratified(store, run, entry, size, bins=bins, seed=seed)]
