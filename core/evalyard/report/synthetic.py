"""A synthetic run of any size, written through the real store: for the report's benchmark and
tests, and for trying the viewer at scale (``python -m evalyard.report.synthetic DB CASES``).

The five scorers mimic the shapes real families store in ``details`` (a judge's reasoning and
checklist items with answers and confidences, claims with verdicts, a sandbox traceback), with
about 1% scorer errors. The same seed always writes the same values.
"""

from __future__ import annotations

import random
import sys
from typing import Any

WORDS = ("the model answer refund policy capital river paris order account shipping days customer "
         "support password reset email within thirty returns item store summary report claims says "
         "because however likely python function list value error test result").split()


def _sentence(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high))).capitalize() + "."


SCORERS: list[dict[str, Any]] = [
    {"name": "exact_match", "plugin": "synthetic", "version": "1", "config": {}, "threshold": 1.0,
     "higher_is_better": True, "labels": ["non match", "match"]},
    {"name": "similarity", "plugin": "synthetic", "version": "1", "config": {"model": "synthetic-embedder"},
     "threshold": 0.6, "higher_is_better": True, "labels": []},
    {"name": "judge_helpfulness", "plugin": "synthetic", "version": "1", "config": {"scale": 5},
     "threshold": 3.0, "higher_is_better": True, "labels": [], "judge_model": "scripted/judge"},
    {"name": "faithfulness", "plugin": "synthetic", "version": "1", "config": {}, "threshold": 0.7,
     "higher_is_better": True, "labels": []},
    {"name": "unit_tests", "plugin": "synthetic", "version": "1", "config": {"timeout": 2}, "threshold": 1.0,
     "higher_is_better": True, "labels": ["pass", "fail", "error"]},
]


def _score(rng: random.Random, name: str, case_index: int) -> dict[str, Any]:
    if rng.random() < 0.01:
        return {"value": None, "error": f"{name}: synthetic failure on case {case_index}", "details": {}}
    if name == "exact_match":
        hit = rng.random() < 0.3
        return {"value": float(hit), "label": "match" if hit else "non match", "passed": hit}
    if name == "similarity":
        value = round(min(1.0, max(0.0, rng.gauss(0.7, 0.2))), 4)
        return {"value": value, "passed": value >= 0.6}
    if name == "judge_helpfulness":
        value = float(rng.randint(1, 5))
        items = [{"question": _sentence(rng, 4, 8)[:-1] + "?", "answer": rng.choice(("yes", "no")),
                  "confidence": round(rng.random(), 2)} for _ in range(rng.randint(2, 4))]
        return {"value": value, "passed": value >= 3, "details": {"reasoning": _sentence(rng, 12, 30), "checklist": items},
                "usage": {"calls": 1, "cache_hits": int(rng.random() < 0.2), "tokens_in": rng.randint(150, 400),
                          "tokens_out": rng.randint(20, 80), "cost_usd": None}}
    if name == "faithfulness":
        claims = [{"claim": _sentence(rng, 4, 9), "verdict": rng.choice(("supported", "supported", "unsupported"))}
                  for _ in range(rng.randint(1, 4))]
        value = round(sum(c["verdict"] == "supported" for c in claims) / len(claims), 4)
        return {"value": value, "passed": value >= 0.7, "details": {"claims": claims}}
    ok = rng.random() < 0.6
    details: dict[str, Any] = {"message": "all tests passed" if ok else "assertion failed", "output": ""}
    if not ok:
        details["traceback"] = ["<tests>:2 in check: assert f(3) == 4", "<candidate>:5 in f: return x + 2"]
    return {"value": float(ok), "label": "pass" if ok else "fail", "passed": ok, "details": details}


def write_synthetic_run(store, cases: int, *, seed: int = 7, name: str = "synthetic") -> str:
    """Write a completed run of ``cases`` cases x five scorers; returns its id."""
    from ..scoring import Case
    from ..analysis.stats import summarize
    from ..suite import Suite

    rng = random.Random(seed)
    items = [Case(id=f"case-{i:05d}", input=_sentence(rng, 6, 18), candidate=_sentence(rng, 10, 40),
                  reference=_sentence(rng, 5, 20), context=[_sentence(rng, 10, 25) for _ in range(rng.randint(0, 2))])
             for i in range(cases)]
    suite = Suite(name=f"{name}-{cases}", cases=items, source="synthetic")
    suite_id = store.ensure_suite(suite)
    run_id = store.create_run(suite_id, items, name=f"{name}-{cases}-{seed}", scorers=SCORERS,
                              versions={"evalyard": "synthetic"}, source="synthetic candidates")
    rows_by_scorer: dict[str, list[dict[str, Any]]] = {s["name"]: [] for s in SCORERS}
    for i, case in enumerate(items):
        for spec in SCORERS:
            score = _score(rng, spec["name"], i)
            rows_by_scorer[spec["name"]].append({
                "case_id": case.id, "scorer": spec["name"], "value": score.get("value"), "label": score.get("label"),
                "passed": score.get("passed"), "details": score.get("details") or {}, "error": score.get("error"),
                "usage": score.get("usage"), "duration_ms": 1.0})
    totals: dict[str, Any] = {"duration_s": 1.0, "scorers": {}}
    for scorer, rows in rows_by_scorer.items():
        for start in range(0, len(rows), 2000):
            store.write_results(run_id, rows[start:start + 2000])
        totals["scorers"][scorer] = summarize(store.outcomes(run_id, scorer))
    store.set_status(run_id, "completed", totals)
    return run_id


#: The two cheap scorers of a bulk run (``write_bulk_run``): a pass/fail and a continuous one.
BULK_SCORERS: list[dict[str, Any]] = [
    {"name": "exact_match", "plugin": "synthetic", "version": "1", "config": {}, "threshold": 1.0,
     "higher_is_better": True, "fingerprint": "synthetic-exact"},
    {"name": "overlap", "plugin": "synthetic", "version": "1", "config": {}, "threshold": 0.5,
     "higher_is_better": True, "fingerprint": "synthetic-overlap"},
]


def bulk_result(rng: random.Random, scorer: str, case_id: str) -> dict[str, Any]:
    """One result of a bulk run's scorer (about 1% errors; labels on the pass/fail scorer)."""
    if rng.random() < 0.01:
        return {"case_id": case_id, "scorer": scorer, "value": None, "label": None, "passed": None,
                "details": {}, "error": f"{scorer}: synthetic failure", "usage": None, "duration_ms": 0.1}
    if scorer == "exact_match":
        hit = rng.random() < 0.4
        return {"case_id": case_id, "scorer": scorer, "value": float(hit), "label": "match" if hit else "non match",
                "passed": hit, "details": {}, "error": None, "usage": None, "duration_ms": 0.1}
    value = round(rng.random() ** 0.7, 4)
    return {"case_id": case_id, "scorer": scorer, "value": value, "label": None, "passed": value >= 0.5,
            "details": {"overlap_tokens": rng.randint(0, 30)}, "error": None, "usage": None, "duration_ms": 0.1}


def write_bulk_run(store, cases: int, *, seed: int = 11, name: str = "bulk", chunk: int = 20_000,
                   status: str = "completed") -> str:
    """A run of ``cases`` cases x two cheap scorers inserted with SQLAlchemy Core executemany
    (a million cases in about a minute), its totals set as the runner sets them (statistics
    from SQL aggregates, the interval a normal approximation). Returns the run id."""
    import uuid
    from datetime import datetime, timezone

    from ..store.queries import insert_bulk_run
    from ..store.reading import live_summaries

    rng = random.Random(seed)
    now = datetime.now(timezone.utc)
    run_id = uuid.uuid4().hex[:12]

    def chunks():  # made as they are written: a million cases never sit in memory at once
        for start in range(0, cases, chunk):
            ids = [f"case-{i:07d}" for i in range(start, min(cases, start + chunk))]
            case_rows = [{"position": start + k, "case_id": case_id,
                          "input": f"question {start + k}: " + _sentence(rng, 4, 10), "reference": _sentence(rng, 2, 6),
                          "context": [], "case_metadata": {}} for k, case_id in enumerate(ids)]
            candidate_rows = [{"run_id": run_id, "case_id": case_id, "text": _sentence(rng, 3, 12)} for case_id in ids]
            result_rows = [{**bulk_result(rng, spec["name"], case_id), "run_id": run_id, "created_at": now}
                           for case_id in ids for spec in BULK_SCORERS]
            yield case_rows, candidate_rows, result_rows

    insert_bulk_run(store, suite={"name": f"{name}-{cases}", "version": uuid.uuid4().hex[:12],
                                  "description": "bulk synthetic run", "source": "synthetic", "case_count": cases,
                                  "created_at": now},
                    run={"id": run_id, "name": f"{name}-{cases}-{seed}", "status": "running", "source": "synthetic",
                         "scorers": BULK_SCORERS, "versions": {"evalyard": "synthetic"}, "totals": {},
                         "created_at": now},
                    chunks=chunks())
    if status != "running":
        summaries = live_summaries(store, run_id, [s["name"] for s in BULK_SCORERS])
        for summary in summaries.values():
            summary["aggregate"] = {}
        store.set_status(run_id, status, {"duration_s": 1.0, "scorers": summaries})
    return run_id


if __name__ == "__main__":
    from ..store import Store

    target = Store(sys.argv[1])
    print(write_synthetic_run(target, int(sys.argv[2]) if len(sys.argv) > 2 else 1000))
