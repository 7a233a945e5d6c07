"""Helpers for the Trust-Score tests: the reference data, item builders, CLI runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from evalyard.cli import cli
from testutil import REFERENCE_DATA

REFERENCE = REFERENCE_DATA / "trust"
ASQA = REFERENCE / "asqa_eval.json"


def reference_json(name: str) -> Any:
    return json.loads((REFERENCE / name).read_text())


def reference_lines(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (REFERENCE / name).read_text().splitlines() if line.strip()]


def invoke(app, *args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj=app, catch_exceptions=False)


def run_json(app, *args, exit_code: int = 0) -> dict[str, Any]:
    result = invoke(app, "run", *args, "--json")
    assert result.exit_code == exit_code, result.output
    return json.loads(result.stdout)


def doc(title: str, text: str, *found: int) -> dict[str, Any]:
    return {"title": title, "text": text, "answers_found": list(found)}


def item(output: str, answers: list[list[str]], docs: list[dict[str, Any]], question: str = "Q?",
         **extra: Any) -> dict[str, Any]:
    return {"question": question, "answers": answers, "docs": docs, "output": output, **extra}


def write_data(path: Path, items: list[dict[str, Any]]) -> Path:
    data = [{"id": f"item-{n + 1:02d}", **it} if "id" not in it else it for n, it in enumerate(items)]
    path.write_text(json.dumps({"data": data}, indent=1))
    return path


def details_by_case(app, run_id: str, scorer: str) -> dict[str, dict[str, Any]]:
    store = app.open_store()
    return {r.case_id: r for r in store.results(run_id, scorer)}


def assert_close(actual: dict[str, float], expected: dict[str, float], tolerance: float = 1e-9) -> None:
    missing = sorted(set(expected) - set(actual))
    assert not missing, f"missing keys: {missing}"
    wrong = {k: (actual[k], v) for k, v in expected.items() if abs(actual[k] - v) > tolerance}
    assert not wrong, wrong
