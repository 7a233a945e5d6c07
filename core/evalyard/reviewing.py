"""Blind side-by-side reviews of two runs (``evalyard review BASE NEW``): the service between the
CLI, the review page and the store.

A **session** is two runs (BASE, NEW), the cases offered in order (``analysis.review_sample``)
and a secret that draws each reviewer's sides. Reviewers join it by name; each verdict is stored
with the side each run was shown on, so the statistics (``analysis.reviews``) never depend on
re-deriving it. What the page gets is built here and only here (``reviewer_cases``): texts of the
case and of the two answers under the names A and B, nothing of the runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .analysis.review_sample import draw, left_side, reviews_needed
from .analysis.reviews import VERDICTS, Review, review_summary
from .errors import InputError, UnknownNameError
from .valid_text import unstorable

if TYPE_CHECKING:
    from .store import Store
    from .store.models import ReviewSessionRow, RunRow

#: Longest note a reviewer may keep with a verdict, and longest reviewer name.
MAX_NOTE = 4000
MAX_REVIEWER = 100
#: The default half-width of the 95% interval the sample size is shown for.
DEFAULT_TARGET = 0.1


def resolve_run(store: "Store", ref: str) -> "RunRow":
    """A run by ``Store.get_run``'s references, or an experiment's cell as ``EXPERIMENT:CELL``
    (the cell's index, or its label as the experiment lists it)."""
    try:
        return store.get_run(ref)
    except UnknownNameError:
        if ":" not in ref:
            raise
    from .store.experiments import cell_runs, get_experiment

    experiment_ref, cell_ref = ref.rsplit(":", 1)
    experiment = get_experiment(store, experiment_ref)
    labels = [c.get("label") or "" for c in experiment.cells]  # each stored cell keeps its label
    index = int(cell_ref) if cell_ref.isdigit() else (labels.index(cell_ref) if cell_ref in labels else None)
    runs = cell_runs(store, experiment.id)
    if index is None or index not in runs:
        raise UnknownNameError(f"experiment {experiment.id} has no run for cell {cell_ref!r} "
                               f"(cells: {', '.join(f'{i}: {label}' for i, label in enumerate(labels))})")
    return store.get_run(runs[index])


def _deltas(store: "Store", base: "RunRow", new: "RunRow") -> dict[str, list[float]]:
    """Per case, NEW minus BASE for every scorer both runs have, turned so positive is better."""
    from .store.queries import paired_values

    base_names = {s["name"] for s in base.scorers or []}
    out: dict[str, list[float]] = {}
    for spec in new.scorers or []:
        if spec["name"] not in base_names:
            continue
        sign = 1.0 if spec.get("higher_is_better", True) else -1.0
        for case_id, before, after in paired_values(store, base.id, new.id, spec["name"]):
            out.setdefault(case_id, []).append(sign * (after - before))
    return out


def open_session(store: "Store", base_ref: str | None, new_ref: str | None, *, session_ref: str | None = None,
                 size: int = 50, seed: int = 0, uniform: bool = False, target: float = DEFAULT_TARGET,
                 fresh: bool = False) -> tuple["ReviewSessionRow", bool]:
    """(the session, whether it was resumed): the one named, else the newest of BASE and NEW
    (unless ``fresh``), else a new one over a sample of the cases both runs answered."""
    from .store import reviews

    if session_ref:
        return reviews.get_session(store, session_ref), True
    if not base_ref or not new_ref:
        raise InputError("give BASE and NEW (two runs), or --session SESSION to resume one")
    base, new = resolve_run(store, base_ref), resolve_run(store, new_ref)
    if base.id == new.id:
        raise InputError(f"BASE and NEW are the same run ({base.id}): a review compares two")
    if not fresh:
        found = reviews.newest_session(store, base.id, new.id)
        if found is not None:
            return found, True
    shared = reviews.answered_by_both(store, base.id, new.id)
    if not shared:
        raise InputError(f"runs {base.id} and {new.id} share no case with an answer in both")
    drawn = draw(shared, {} if uniform else _deltas(store, base, new), size, seed=seed, uniform=uniform)
    strata: dict[str, int] = {}
    for d in drawn:
        strata[d.stratum] = strata.get(d.stratum, 0) + 1
    plan = {"method": "uniform" if uniform else "informative", "size": size, "seed": seed, "shared": len(shared),
            "strata": strata, "target_half_width": target, "reviews_needed": reviews_needed(target)}
    session_id = reviews.create_session(store, base.id, new.id, [d.case_id for d in drawn], plan)
    return reviews.get_session(store, session_id), False


def session_cases(store: "Store", row: "ReviewSessionRow") -> list[dict[str, Any]]:
    """The session's cases as the server keeps them: the case's texts and each run's answer."""
    from .store.labels import run_cases

    base, new = store.get_run(row.base_run), store.get_run(row.new_run)
    base_cases, new_cases = run_cases(store, base, row.case_ids), run_cases(store, new, row.case_ids)
    out = []
    for case_id in row.case_ids:
        b, n = base_cases.get(case_id), new_cases.get(case_id)
        if b is None or n is None:  # gone from a suite since the session began: nothing to compare
            continue
        shared = n.messages if n.messages == b.messages else None  # a generated conversation differs per run
        out.append({"id": case_id, "input": n.input, "context": list(n.context), "messages": shared,
                    "answers": {"base": {"text": b.candidate, "messages": None if shared else b.messages},
                                "new": {"text": n.candidate, "messages": None if shared else n.messages}}})
    return out


def reviewer_cases(cases: list[dict[str, Any]], secret: str, reviewer: str, cut=lambda text: text) -> list[dict[str, Any]]:
    """What one reviewer's page holds: each case with its two answers as A and B, the sides drawn
    for this reviewer. Nothing here names a run, a model, a prompt, a score or a cost."""
    out = []
    for case in cases:
        left = left_side(secret, reviewer, case["id"])
        right = "new" if left == "base" else "base"
        out.append({"id": case["id"], "input": cut(case["input"]), "context": [cut(c) for c in case["context"]],
                    "messages": case["messages"],
                    "a": {"text": cut(case["answers"][left]["text"]), "messages": case["answers"][left]["messages"]},
                    "b": {"text": cut(case["answers"][right]["text"]), "messages": case["answers"][right]["messages"]}})
    return out


def check_reviewer(name: str) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_REVIEWER or not name.isprintable():
        raise InputError(f"reviewer {name!r}: a printable name of 1 to {MAX_REVIEWER} characters")
    return name.strip()


def record(store: "Store", row: "ReviewSessionRow", case_id: str, reviewer: str, verdict: str, note: str = "") -> None:
    """Store (or replace) one verdict, with the side NEW was shown on for this reviewer."""
    from .store.reviews import save_review

    if case_id not in row.case_ids:
        raise InputError(f"case {case_id!r} is not one of session {row.id}")
    if verdict not in VERDICTS:
        raise InputError(f"verdict {verdict!r}: expected one of {', '.join(VERDICTS)}")
    if not isinstance(note, str) or len(note) > MAX_NOTE:
        raise InputError(f"a note is text of up to {MAX_NOTE} characters")
    # a NUL (PostgreSQL's text refuses it) or a lone surrogate (no UTF-8 database takes it)
    if "\x00" in note or unstorable(note, "note", json_values=False):
        raise InputError("a note holds a NUL character or text that is not valid Unicode")
    save_review(store, row.id, case_id, check_reviewer(reviewer), left_side(row.secret, reviewer, case_id),
                verdict, note)


def as_reviews(rows: list[dict[str, Any]]) -> list[Review]:
    return [Review(r["case_id"], r["reviewer"], r["left"], "new" if r["left"] == "base" else "base", r["verdict"])
            for r in rows]


def session_summary(store: "Store", ref: str) -> dict[str, Any]:
    """The session's summary, which reveals which run was which: the win rate of NEW over BASE with
    its interval, the reviewers' agreement, each reviewer's position bias, and the notes."""
    from .store.reviews import get_session, session_reviews

    row = get_session(store, ref)
    base, new = store.get_run(row.base_run), store.get_run(row.new_run)
    rows = session_reviews(store, row.id)
    return {"session": row.id, "base": {"id": base.id, "name": base.name}, "new": {"id": new.id, "name": new.name},
            "plan": row.plan, "cases": len(row.case_ids), "reviewers": sorted({r["reviewer"] for r in rows}),
            **review_summary(as_reviews(rows)),
            "notes": [{"case_id": r["case_id"], "reviewer": r["reviewer"], "verdict": r["verdict"], "shown_left": r["left"],
                       "note": r["note"]} for r in rows if r["note"]]}


def human_verdict(store: "Store", base_id: str, new_id: str) -> dict[str, Any] | None:
    """The people's win rate of NEW over BASE over every session of the pair, or None without reviews."""
    from .analysis.reviews import win_rate
    from .store.reviews import pair_reviews

    rows = pair_reviews(store, base_id, new_id)
    if not rows:
        return None
    return {**win_rate(as_reviews(rows)), "reviewers": len({r["reviewer"] for r in rows}),
            "sessions": len({r["session"] for r in rows})}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def human_line(found: dict[str, Any]) -> str:
    ci = found.get("ci95")
    return (f"people (blind review): NEW wins {_pct(found['win_rate'])}"
            + (f" [{_pct(ci[0])}, {_pct(ci[1])}]" if ci else "")
            + f" of {found['reviews']} reviews of {found['cases']} cases by {found['reviewers']} reviewer"
            + ("s" if found["reviewers"] != 1 else "")
            + f" (wins {found['wins']}, losses {found['losses']}, ties {found['ties']}, both bad {found['both_bad']}; "
              "ties and both bad count half)")


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """The summary as text for the terminal."""
    base, new, plan = summary["base"], summary["new"], summary["plan"] or {}
    rate = summary["win_rate"]
    lines = [f"review session {summary['session']}: BASE {base['name']} ({base['id']})  vs  NEW {new['name']} ({new['id']})",
             f"{summary['cases']} cases offered ({plan.get('method', '?')} sample of {plan.get('shared', '?')} cases "
             f"both runs answered), {rate['reviews']} reviews by {len(summary['reviewers'])} reviewer"
             f"{'s' if len(summary['reviewers']) != 1 else ''}"]
    if rate["win_rate"] is None:
        return lines + ["no verdicts yet"]
    lines.append(human_line({**rate, "reviewers": len(summary["reviewers"])}) + f", 95% interval {rate['ci_method']}")
    if plan.get("method") == "informative":
        lines.append("note: the informative sample puts the cases where the runs' scores disagree first; its win rate "
                     "speaks for the sample, not for the whole suite (--uniform draws a sample that does)")
    needed = plan.get("reviews_needed")
    if needed:
        lines.append(f"for a 95% interval of +/-{plan['target_half_width']:.2f}: about {needed} reviews (worst case)")
    agreement = summary["agreement"]
    for pair in agreement.get("cohen") or []:
        lines.append(f"agreement {' and '.join(pair['raters'])}: Cohen's kappa {_num(pair.get('kappa'))}"
                     f"{_ci(pair.get('ci95'))} over {pair.get('cases', '?')} cases")
    for key, label in (("fleiss", "Fleiss' kappa"),):
        found = agreement.get(key) or {}
        if found.get("kappa") is not None:
            lines.append(f"agreement of all: {label} {_num(found['kappa'])}{_ci(found.get('ci95'))} over "
                         f"{found.get('cases')} cases")
    for key, label in (("alpha_nominal", "nominal"), ("alpha_ordinal", "ordinal")):
        found = agreement.get(key) or {}
        if found.get("alpha") is not None:
            lines.append(f"Krippendorff's alpha ({label}): {_num(found['alpha'])}{_ci(found.get('ci95'))}")
    for name, bias in summary["position_bias"].items():
        share = bias["left_share"]
        lines.append(f"position bias of {name or '(unnamed)'}: left side won {_pct(share)}{_ci(bias['ci95'], pct=True)} "
                     f"of {bias['decisive']} decisive verdicts (p = {_num(bias['p'])} against 50%)")
    for note in summary["notes"]:
        lines.append(f"note by {note['reviewer']} on {note['case_id']} ({note['verdict']}, NEW shown "
                     f"{'right' if note['shown_left'] == 'base' else 'left'}): {note['note']}")
    return lines


def _num(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def _ci(ci: Any, pct: bool = False) -> str:
    if not ci:
        return ""
    show = _pct if pct else _num
    return f" [{show(ci[0])}, {show(ci[1])}]"


def review_labels(store: "Store", pairwise_run: "RunRow") -> tuple[list[Any], str, str]:
    """A pairwise judge's run (``compare BASE NEW --judge``) labelled by the people's blind reviews
    of BASE and NEW, as ``calibrate`` reads labels: (its reviewed cases, each with
    ``metadata.human_label`` in the judge's labels, the labels' hash, where they came from). A
    case's label follows the mean of its verdicts, as the win rate counts them: above a half
    ``candidate`` (NEW, the judge's candidate, was preferred), below ``reference``, else ``equal``."""
    import re

    from .analysis.labels import labels_hash
    from .analysis.reviews import score
    from .store.labels import run_cases
    from .store.reviews import pair_reviews

    found = re.fullmatch(r"pairwise (\S+) vs (\S+)", store.suite_of(pairwise_run).name)
    if found is None:
        raise InputError(f"run {pairwise_run.id} is not a pairwise judge's run of two runs (`evalyard compare BASE NEW "
                         f"--judge`): --reviews labels only those")
    base, new = found.groups()
    totals: dict[str, list[float]] = {}
    for review in as_reviews(pair_reviews(store, base, new)):
        totals.setdefault(review.case_id, []).append(score(review, "new"))
    if not totals:
        raise InputError(f"runs {base} and {new} have no reviews in {store.url}: review them with "
                         f"`evalyard review {base} {new}`")
    labels = {case_id: {"label": "candidate" if sum(s) / len(s) > 0.5 else "reference" if sum(s) / len(s) < 0.5
                        else "equal"} for case_id, s in totals.items()}
    cases = list(run_cases(store, pairwise_run, list(labels)).values())
    for case in cases:
        case.metadata = {**case.metadata, "human_label": labels[case.id]["label"]}
    return cases, labels_hash({c.id: labels[c.id] for c in cases}), f"reviews of {base} vs {new}"


def experiment_pairs(store: "Store", ref: str) -> tuple[Any, list[tuple[str, str, str, str]]]:
    """(the experiment, its cells' runs in pairs): every (label i, run i, label j, run j) with
    i < j among the cells that have a run, in the experiment's order. A label the experiment
    repeats gets its cell's index, so each system keeps one name in the ranking."""
    from .store.experiments import cell_runs, get_experiment

    try:
        experiment = get_experiment(store, ref)
    except UnknownNameError as exc:
        raise UnknownNameError(f"{exc}: give an experiment to review its cells in pairs, or give BASE and NEW "
                               "(two runs)") from None
    runs = cell_runs(store, experiment.id)
    labels = [c.get("label") or f"cell {i}" for i, c in enumerate(experiment.cells)]
    named = [(f"{labels[i]} (cell {i})" if labels.count(labels[i]) > 1 else labels[i], runs[i])
             for i in sorted(runs) if i < len(labels)]
    if len(named) < 2:
        raise InputError(f"experiment {experiment.id} has {len(named)} cell(s) with a run: a review compares two")
    pairs = [(a, run_a, b, run_b) for k, (a, run_a) in enumerate(named) for b, run_b in named[k + 1:]]
    return experiment, pairs


def next_pair(store: "Store", ref: str, reviewer: str, **sample: Any) -> tuple["ReviewSessionRow", bool, int, int]:
    """The session of an experiment's pair of cells this reviewer reviews next: (session, whether it
    was resumed, the pair's place from 1, the number of pairs). A pair this reviewer began and did not
    finish comes first; else the pair with the fewest verdicts of anyone among those this reviewer has
    not finished, so several reviewers spread over the pairs and every pair gets battles."""
    from .store.reviews import newest_session, session_reviews

    _, pairs = experiment_pairs(store, ref)
    open_pairs = []  # (began by this reviewer, verdicts of anyone, place)
    for place, (_, run_a, _, run_b) in enumerate(pairs):
        found = newest_session(store, run_a, run_b)
        rows = session_reviews(store, found.id) if found is not None else []
        mine = sum(r["reviewer"] == reviewer for r in rows)
        if found is None or mine < len(found.case_ids):
            open_pairs.append((mine == 0, len(rows), place))
    if not open_pairs:
        raise InputError(f"{reviewer} has reviewed every pair of experiment {ref}'s cells: `evalyard review --ranking "
                         f"{ref}` ranks them")
    place = min(open_pairs)[2]
    _, run_a, _, run_b = pairs[place]
    session, resumed = open_session(store, run_a, run_b, **sample)
    return session, resumed, place + 1, len(pairs)


def experiment_ranking(store: "Store", ref: str, *, rounds: int | None = None) -> dict[str, Any]:
    """The Bradley-Terry ranking of an experiment's cells from every blind review of a pair of them
    (``analysis.ranking``): each verdict a battle between the cells shown left and right."""
    from .analysis.ranking import BOOTSTRAP_ROUNDS, bradley_terry
    from .store.reviews import pair_reviews

    experiment, pairs = experiment_pairs(store, ref)
    battles, counts = [], []
    for name_a, run_a, name_b, run_b in pairs:
        rows = pair_reviews(store, run_a, run_b)
        counts.append({"systems": [name_a, name_b], "reviews": len(rows)})
        for r in rows:
            left, right = (name_a, name_b) if r["left"] == "base" else (name_b, name_a)
            battles.append(Review(r["case_id"], r["reviewer"], left, right, r["verdict"]))
    found = bradley_terry(battles, rounds=rounds or BOOTSTRAP_ROUNDS)
    if not battles:
        found["note"] = "no verdicts yet"
    return {"experiment": {"id": experiment.id, "name": experiment.name}, "pairs": counts, **found}


def ranking_lines(ranking: dict[str, Any]) -> list[str]:
    """The ranking as text for the terminal, best first."""
    experiment = ranking["experiment"]
    reviewed = sum(1 for p in ranking["pairs"] if p["reviews"])
    lines = [f"Bradley-Terry ranking of experiment {experiment['name'] or experiment['id']} ({experiment['id']}): "
             f"{ranking['battles']} blind verdicts on {reviewed} of {len(ranking['pairs'])} pairs of cells; "
             f"ties: {ranking['ties']}; 95% bootstrap intervals"]
    if ranking["note"]:
        return lines + [f"no ranking: {ranking['note']}"]
    width = max(len(row["system"]) for row in ranking["systems"])
    lines.append(f"{'rank':>4}  {'system':<{width}}  {'rating':>7}  {'95% interval':<17}  battles")
    for row in ranking["systems"]:
        ci = row["ci95"]
        shown = f"[{ci[0]:.0f}, {ci[1]:.0f}]" if ci else "-"
        lines.append(f"{row['rank']:>4}  {row['system']:<{width}}  {row['rating']:>7.0f}  {shown:<17}  {row['battles']}")
    return lines
