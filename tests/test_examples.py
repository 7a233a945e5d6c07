"""The example suites the README tour and `make demo` use run cleanly with the installed plugins."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from evalyard.cli import cli
from testutil import ROOT

pytestmark = pytest.mark.usefixtures("installed_plugins")


def run_example(name):
    result = CliRunner().invoke(cli, ["run", str(ROOT / "examples" / name), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def needs(*scorers):
    from evalyard import Application

    registry = Application().registry
    missing = [s for s in scorers if s not in registry.scorers]
    if missing:
        pytest.skip(f"plugins for {', '.join(missing)} are not installed")


def test_quickstart_runs_every_scorer_without_errors():
    needs("exact_match", "bertscore")
    data = run_example("quickstart.yaml")
    assert data["status"] == "completed" and data["cases"] == 20
    assert len(data["scorers"]) == 7
    assert all(s["errors"] == 0 and s["count"] == 20 for s in data["scorers"].values())


def test_coding_example_labels():
    needs("python_unit_testing")
    data = run_example("coding.yaml")
    stats = data["scorers"]["python_unit_testing"]
    assert stats["errors"] == 0
    assert stats["labels"] == {"error": 2, "fail": 2, "pass": 1, "timeout": 1}
    rows = {json.loads(line)["case_id"]: json.loads(line)
            for line in CliRunner().invoke(cli, ["runs", "export", data["run_id"]]).output.splitlines()}
    assert rows["reverse-two-samples"]["details"]["pass_at_k"] == {"1": 0.5, "2": 1.0}
    assert rows["reads-host-files"]["label"] == "error"  # the jail and the audit hook stopped open(); nothing was read


@pytest.mark.parametrize("path", sorted((ROOT / "examples" / "labelled").glob("*.jsonl")), ids=lambda p: p.name)
def test_labelled_example_sets_load_with_unique_ids(path):
    from evalyard import Application

    suite, _ = Application().load_suite(str(path))
    ids = [case.id for case in suite.cases]
    assert len(ids) == len(set(ids)) >= 12
    labels = [case.metadata.get("human_label") for case in suite.cases]
    if path.name.startswith("ab_"):  # the A/B pair: two runs' answers, no labels
        assert labels == [None] * len(labels)
    else:  # calibrate's sets: every case labelled, both ways
        assert None not in labels and len(set(labels)) == 2


def test_the_vision_grid_demo_sends_the_images_and_refuses_a_blind_judge(tmp_path):
    """examples/media_demo/vision_grid.py: the grid's table as evalyard prints it, every server got
    the squares' exact bytes, and a judge whose prompt does not place them costs no request."""
    import subprocess
    import sys

    needs("ragas/multimodal_faithfulness", "criteria/correctness")
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "media_demo" / "vision_grid.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    cells = [line for line in out.splitlines() if line.startswith(("0: openai/vision-a", "1: openai/vision-b"))]
    assert len(cells) == 2 and cells[0].count("1.000 [1.000, 1.000] (baseline)") == 2
    assert cells[1].count("0.667 [0.333, 1.000] -0.333") == 2  # B wrong on 2 of 6, by the judge and by contains
    assert out.count("each the exact bytes of a square") == 3 and "NOT the files" not in out
    assert "server judge: 8 requests, 8 image parts" in out  # 12 judged answers, 4 of B's from the cache
    assert "would show its model 'openai/vision-judge' a text stand-in" in out
    assert "exit 2; requests it cost: 0" in out
