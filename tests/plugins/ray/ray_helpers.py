"""Helpers of the Ray tests (a uniquely named module: conftest modules share one name)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def cases_file(path: Path, n: int, *, failing: tuple[int, ...] = ()) -> Path:
    with path.open("w") as out:
        for i in range(n):
            metadata = {"value": (i % 7) / 7, **({"raise": True} if i in failing else {})}
            out.write(json.dumps({"id": f"c{i}", "candidate": f"answer {i}", "reference": f"answer {i % 3}",
                                  "metadata": metadata}) + "\n")
    return path


def results(db: Path, run_id: str | None = None) -> list[tuple]:
    if not db.exists():
        return []
    with sqlite3.connect(db) as con:
        try:
            query = "select case_id, scorer, value, error, details from results"
            return con.execute(query + (" where run_id=?" if run_id else ""), (run_id,) if run_id else ()).fetchall()
        except sqlite3.OperationalError:  # tables not made yet
            return []


def runs(db: Path) -> list[tuple]:
    if not db.exists():
        return []
    with sqlite3.connect(db) as con:
        try:
            return con.execute("select id, status from runs").fetchall()
        except sqlite3.OperationalError:
            return []


def nodes_of(rows: list[tuple]) -> set[str]:
    return {json.loads(details)["node"] for *_, error, details in rows if error is None}


def wait_for(predicate, timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def plugin_site(root: Path, version: str) -> Path:
    """A directory that, on a PYTHONPATH, installs the test plugin ``evalyard-raytest`` at ``version``."""
    site = root / f"site-{version}"
    shutil.copytree(HERE / "evalyard_raytest", site / "evalyard_raytest")
    info = site / f"evalyard_raytest-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: evalyard-raytest\nVersion: {version}\n")
    (info / "entry_points.txt").write_text("[evalyard]\nraytest = evalyard_raytest\n")
    (info / "top_level.txt").write_text("evalyard_raytest\n")
    (info / "RECORD").write_text("")
    return site
