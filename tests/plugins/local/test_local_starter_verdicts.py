"""The README's custom scorer (``evalyard prompts new NAME --answer binary``) judged by the local
models on the quickstart cases, through a full run: every case gets a value, the calls' usage is
recorded, a P(yes) judge generates one token per case, and a judge on a local model answers in a
word by default (reasoning only when asked for)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from evalyard.cli import cli
from local_helpers import QWEN, SMOL

QUICKSTART = Path(__file__).resolve().parents[3] / "examples" / "quickstart.yaml"


#: The qwen test runs the quickstart cases in this many parts, one test each, so pytest-xdist can
#: spread its calls over its workers.
QWEN_PARTS = 2


def quickstart_part(tmp_path, part: int, parts: int) -> tuple[Path, int]:
    """The quickstart suite with every ``parts``-th of its cases from the ``part``-th on, and how many."""
    suite = yaml.safe_load(QUICKSTART.read_text())
    lines = (QUICKSTART.parent / suite["data"]).read_text().splitlines()[part::parts]
    folder = tmp_path / "suite"  # not the prompts directory run_starter writes into
    folder.mkdir()
    data = folder / f"quickstart-part{part}.jsonl"
    data.write_text("\n".join(lines) + "\n")
    path = folder / f"quickstart-part{part}.yaml"
    path.write_text(yaml.safe_dump({**suite, "data": str(data)}))
    return path, len(lines)


def run_starter(app, tmp_path, model, scorer, *extra, suite=QUICKSTART):
    runner = CliRunner()
    made = runner.invoke(cli, ["prompts", "new", "answers_ok", "--answer", "binary", "--dir", str(tmp_path)], obj=app)
    assert made.exit_code == 0, made.output
    result = runner.invoke(cli, ["run", str(suite), "--prompts-dir", str(tmp_path), "-s", scorer,
                                 "--judge-model", model, "--json", *extra], obj=app)
    assert result.exit_code in (0, 1), result.output  # 1: a threshold failed, which is the model's business
    data = json.loads(result.stdout)
    exported = runner.invoke(cli, ["runs", "export", data["run_id"]], obj=app)
    rows = [json.loads(line) for line in exported.stdout.splitlines() if line.strip()]
    return data, rows


@pytest.mark.slow
@pytest.mark.timeout(1200)  # 20 local calls: seconds on an idle machine, minutes on a busy one
def test_smollm_with_logprobs_gives_every_quickstart_case_a_p_yes_from_one_token(app, tmp_path, smol_path):
    data, rows = run_starter(app, tmp_path, SMOL, "answers_ok:logprobs=true")
    assert data["scorers"]["answers_ok"]["errors"] == 0 and len(rows) == 20
    for row in rows:
        assert row["error"] is None and 0 <= row["value"] <= 1
        assert row["details"]["value_from"] == "P(yes) of the first answer token"
    assert data["usage"]["calls"] == 20 and data["usage"]["completion_tokens"] <= 20


@pytest.mark.slow
@pytest.mark.timeout(3000)
@pytest.mark.parametrize("part", range(QWEN_PARTS))
def test_qwen_by_default_gives_every_case_a_readable_verdict(qwen_models, app, tmp_path, part):
    suite, cases = quickstart_part(tmp_path, part, QWEN_PARTS)
    # No options: on a local model the judge answers in one word (no reasoning unless asked for)
    data, rows = run_starter(app, tmp_path, QWEN, "answers_ok", suite=suite)
    assert data["scorers"]["answers_ok"]["errors"] == 0 and len(rows) == cases == 20 // QWEN_PARTS
    assert all(row["label"] in ("yes", "no") and row["value"] in (0.0, 1.0) for row in rows)
    assert data["usage"]["completion_tokens"] <= cases * 8
