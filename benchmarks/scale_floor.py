"""The floor for ``bench_scale.py``: a plain script doing a run's useful work and nothing else.

It reads a JSONL data file line by line, scores every case with the same two lexicon scorers
(``exact_match``, ``word_count_match``: the plugin's own classes, so scoring costs the same),
and keeps the cases and the results in SQLite with ``executemany``, one transaction per
10,000 cases. No checks, no resume, no statistics: what evalyard does on top of this is the
price of the platform, and ``bench_scale.py`` reports evalyard's time as a multiple of this.

Usage: python benchmarks/scale_floor.py DATA.jsonl OUT.db
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT / "core", ROOT / "plugins" / "lexicon"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from evalyard import Case  # noqa: E402
from evalyard_lexicon import ExactMatch, WordCountMatch  # noqa: E402

CHUNK = 10_000


def main(data: str, db: str) -> None:
    scorers = [ExactMatch(), WordCountMatch()]
    connection = sqlite3.connect(db)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    connection.execute("CREATE TABLE cases (id TEXT PRIMARY KEY, input TEXT, candidate TEXT, reference TEXT, "
                       "context TEXT, metadata TEXT)")
    connection.execute("CREATE TABLE results (case_id TEXT, scorer TEXT, value REAL, label TEXT, passed INTEGER, "
                       "details TEXT, error TEXT, PRIMARY KEY (case_id, scorer))")
    cases, results = [], []

    def flush() -> None:
        with connection:
            connection.executemany("INSERT INTO cases VALUES (?, ?, ?, ?, ?, ?)", cases)
            connection.executemany("INSERT INTO results VALUES (?, ?, ?, ?, ?, ?, ?)", results)
        cases.clear()
        results.clear()

    with open(data, encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            case = Case(id=str(record["id"]), input=record.get("input"), candidate=record.get("candidate"),
                        reference=record.get("reference"))
            cases.append((case.id, case.input, case.candidate, case.reference, "[]", "{}"))
            for scorer in scorers:
                score = scorer.score(case)
                passed = None if scorer.threshold is None or score.value is None else score.value >= scorer.threshold
                results.append((case.id, scorer.name, score.value, score.label, passed,
                                json.dumps(score.details), score.error))
            if len(cases) >= CHUNK:
                flush()
    flush()
    connection.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
