"""``jury``: several scorers pooled, through the real CLI. Majority equals inspect_ai's
``multi_scorer`` with its ``mode`` reducer (the real package, in its own venv) on generated member
verdicts, ties included; mean and weighted are what they say; weighted by default reads each
member's saved calibration (``evalyard calibrate --save``) and weighs it by its kappa."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner
from testutil import error_lines

from evalyard.cli import cli

TOKENS = ["t0", "t1", "t2", "t3"]


def write_cases(path, rng, n):
    rows = []
    for k in range(n):
        present = [t for t in TOKENS if rng.random() < 0.5]
        rows.append({"id": f"c{k}", "reference": "one two three", "candidate": " ".join(present + ["w"] * rng.randint(0, 4))})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def run(app, data, scorer, exit_code=0):
    result = CliRunner().invoke(cli, ["run", str(data), "-s", scorer, "--json"], obj=app, catch_exceptions=False)
    assert result.exit_code == exit_code, result.output
    run_id = json.loads(result.stdout)["run_id"]
    exported = CliRunner().invoke(cli, ["runs", "export", run_id], obj=app, catch_exceptions=False)
    return {r["case_id"]: r for r in map(json.loads, exported.stdout.splitlines())}


INSPECT = r"""
import json, sys
from inspect_ai.scorer import Score
from inspect_ai.scorer._reducer import mode_score
reduce = mode_score()
print(json.dumps([reduce([Score(value=v) for v in values]).value for values in json.load(sys.stdin)]))
"""

JURIES = {
    "four, ties": ["regex_match:pattern=t0", "regex_match:pattern=t1", "regex_match:pattern=t2",
                   "regex_match:pattern=t3"],
    "three": ["regex_match:pattern=t2", "regex_match:pattern=t0", "regex_match:pattern=t1"],
    "a graded member first": ["word_count_match", "regex_match:pattern=t0", "regex_match:pattern=t1"],
}


@pytest.mark.slow
def test_majority_equals_inspect_ais_mode(installed_plugins, app, tmp_path, inspect_python):
    from reference_envs import run_reference

    rng = random.Random(4)
    data = tmp_path / "cases.jsonl"
    write_cases(data, rng, 120)
    equal = {}
    for what, judges in JURIES.items():
        rows = run(app, data, "jury:judges=" + "|".join(judges))
        member_values = [[rows[c]["details"]["members"][j]["value"] for j in judges] for c in sorted(rows)]
        theirs = run_reference(inspect_python, INSPECT, member_values)
        ours = [rows[c]["value"] for c in sorted(rows)]
        assert ours == theirs, what
        equal[what] = len(ours)
        if what == "four, ties":  # ties happen, and are broken the same way
            assert sum(1 for v in member_values if sum(v) == 2) > 10
    print("\njury majority vs inspect_ai mode:", equal)


def test_mean_and_explicit_weights(app, tmp_path):
    data = tmp_path / "cases.jsonl"
    rows = write_cases(data, random.Random(2), 30)
    judges = "regex_match:pattern=t0|regex_match:pattern=t1"
    mean = run(app, data, f"jury:judges={judges},mode=mean")
    for row in rows:
        has = [float(t in row["candidate"].split()) for t in ("t0", "t1")]
        assert mean[row["id"]]["value"] == pytest.approx(sum(has) / 2)
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"name: weighted\ndata: {data.name}\nscorers:\n  - name: jury\n    config:\n"
                     "      judges: [regex_match:pattern=t0, regex_match:pattern=t1]\n      mode: weighted\n"
                     "      weights: {regex_match:pattern=t0: 3, regex_match:pattern=t1: 1}\n")
    result = CliRunner().invoke(cli, ["run", str(suite), "--json"], obj=app, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.stdout)["run_id"]
    exported = CliRunner().invoke(cli, ["runs", "export", run_id], obj=app, catch_exceptions=False)
    weighted = {r["case_id"]: r for r in map(json.loads, exported.stdout.splitlines())}
    for row in rows:
        has = [float(t in row["candidate"].split()) for t in ("t0", "t1")]
        assert weighted[row["id"]]["value"] == pytest.approx((3 * has[0] + has[1]) / 4)
        assert weighted[row["id"]]["details"]["weights"] == {"regex_match:pattern=t0": 3.0,
                                                              "regex_match:pattern=t1": 1.0}


def test_weighted_by_each_judges_saved_calibration(app, tmp_path):
    """Two members calibrated against people's labels: the one that agrees with them weighs its
    kappa (1), the one at chance weighs 0, so the jury follows the first."""
    rng = random.Random(9)
    labelled = tmp_path / "labelled.jsonl"
    rows = []
    for k in range(40):
        good = k % 2 == 0
        noise = rng.random() < 0.5
        rows.append({"id": f"l{k}", "candidate": ("good " if good else "bad ") + ("noise" if noise else ""),
                     "metadata": {"human_label": "correct" if good else "incorrect"}})
    labelled.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for pattern in ("good", "noise"):
        saved = CliRunner().invoke(cli, ["calibrate", str(labelled), "--scorer", f"regex_match:pattern={pattern}",
                                         "--save"], obj=app, catch_exceptions=False)
        assert saved.exit_code == 0, saved.output
    scored = run(app, labelled, "jury:judges=regex_match:pattern=good|regex_match:pattern=noise,mode=weighted")
    weights = scored["l0"]["details"]["weights"]
    assert weights["regex_match:pattern=good"] == pytest.approx(1.0)
    assert weights["regex_match:pattern=noise"] < 0.3
    for row in rows:
        got = scored[row["id"]]["value"]
        good = row["candidate"].startswith("good")
        expected = (weights["regex_match:pattern=good"] * good + weights["regex_match:pattern=noise"] *
                    ("noise" in row["candidate"])) / sum(weights.values())
        assert got == pytest.approx(expected)


def test_weighted_without_a_calibration_names_the_judge(app, tmp_path):
    data = tmp_path / "cases.jsonl"
    write_cases(data, random.Random(1), 3)
    rows = run(app, data, "jury:judges=regex_match:pattern=t0|regex_match:pattern=t1,mode=weighted", exit_code=1)
    assert all(r["value"] is None for r in rows.values())
    assert "judge 'regex_match:pattern=t0' has no saved calibration" in rows["c0"]["error"]


BAD = {
    "one judge": ("jury:judges=contains", "a jury needs at least two judges"),
    "unknown judge": ("jury:judges=contains|nope", "judge 'nope': unknown scorer 'nope'"),
    "twice": ("jury:judges=contains|contains", "a judge is listed twice"),
    "a jury on a jury": ("jury:judges=contains|jury", "a jury cannot sit on a jury"),
    "weights without weighted": ("jury:judges=contains|json_valid,mode=mean,weights=x", "expected a mapping"),
    "bad mode": ("jury:judges=contains|json_valid,mode=vote", "must be one of majority, mean, weighted"),
}


@pytest.mark.parametrize("what", sorted(BAD))
def test_bad_juries_are_one_line(app, tmp_path, what):
    scorer, message = BAD[what]
    data = tmp_path / "cases.jsonl"
    write_cases(data, random.Random(1), 2)
    db = tmp_path / "runs.db"
    result = CliRunner().invoke(cli, ["run", str(data), "-s", scorer, "--db", f"sqlite:///{db}"], obj=app)
    assert result.exit_code == 2, result.output
    (line,) = error_lines(result.output)
    assert message in line, line
    assert not db.exists()
