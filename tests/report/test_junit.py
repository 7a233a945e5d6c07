"""`evalyard run --junit` and `evalyard compare --junit`: one test case per case x scorer, valid
against the common JUnit schema (tests/report/junit.xsd)."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from testutil import write

xmlschema = pytest.importorskip("xmlschema", reason="xmlschema validates the JUnit files (pip install -e '.[test]')")
SCHEMA = Path(__file__).with_name("junit.xsd")


def _suite(path: Path, scripts: dict[str, object]) -> Path:
    cases = [{"id": case_id, "candidate": f"answer {case_id}", "metadata": {"script": script}}
             for case_id, script in scripts.items()]
    return write(path, json.dumps({"name": "ci-suite", "scorers": ["scripted", "scripted_async"], "cases": cases}))


def _run(exe: str, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([exe, *args], env=env, capture_output=True, text=True)


@pytest.fixture(scope="module")
def schema():
    return xmlschema.XMLSchema(str(SCHEMA))


def _suites(path: Path) -> dict[str, ET.Element]:
    return {s.get("name"): s for s in ET.parse(path).getroot().iter("testsuite")}


def test_run_junit_has_a_case_per_result_failures_and_errors(tmp_path, cli_env, evalyard_exe, schema):
    suite = _suite(tmp_path / "suite.yaml", {"good": 0.9, "low": 0.2, "broken": "raise"})
    out = tmp_path / "ci" / "junit.xml"
    done = _run(evalyard_exe, cli_env, "run", str(suite), "--junit", str(out))
    assert done.returncode == 0, done.stderr
    schema.validate(str(out))
    suites = _suites(out)
    assert set(suites) == {"ci-suite.scripted", "ci-suite.scripted_async"}
    scripted = suites["ci-suite.scripted"]
    assert (scripted.get("tests"), scripted.get("failures"), scripted.get("errors")) == ("3", "1", "1")
    cases = {c.get("name"): c for c in scripted.iter("testcase")}
    assert list(cases) == ["good", "low", "broken"]  # suite order
    assert cases["good"].find("failure") is None and cases["good"].find("error") is None
    failure = cases["low"].find("failure")
    assert "value 0.2" in failure.get("message") and "threshold 0.5" in failure.get("message")
    error = cases["broken"].find("error")
    assert "scripted failure on broken" in error.text and error.get("type") == "ScorerError"
    # no threshold: every scored result passes, the error is still an error
    unthresholded = suites["ci-suite.scripted_async"]
    assert (unthresholded.get("failures"), unthresholded.get("errors")) == ("0", "1")
    root = ET.parse(out).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("6", "1", "2")


def test_compare_junit_reports_the_regression_check(tmp_path, cli_env, evalyard_exe, schema):
    def run(name: str, scripts: dict[str, object]) -> str:
        suite = _suite(tmp_path / f"{name}.yaml", scripts)
        done = _run(evalyard_exe, cli_env, "run", str(suite), "--name", name, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["run_id"]

    base = run("base", {f"c{i}": 0.9 for i in range(12)})
    new = run("new", {f"c{i}": 0.1 if i < 10 else 0.9 for i in range(12)})
    out = tmp_path / "compare.xml"
    done = _run(evalyard_exe, cli_env, "compare", base, new, "--junit", str(out))
    assert done.returncode == 0, done.stderr
    schema.validate(str(out))
    scripted = _suites(out)["ci-suite.scripted"]
    cases = {c.get("name"): c for c in scripted.iter("testcase")}
    assert len(cases) == 13  # 12 cases + the scorer's regression check
    assert "base 0.9, delta -0.8" in cases["c0"].find("system-out").text
    assert cases["c0"].find("failure") is not None and cases["c11"].find("failure") is None
    check = cases["(paired mean delta)"].find("failure")
    assert check is not None and "regressed" in check.get("message")
    assert {p.get("name"): p.get("value") for p in scripted.iter("property")}["base_run"] == base


def test_the_schema_rejects_what_ci_viewers_cannot_read(tmp_path, schema):
    bad = write(tmp_path / "bad.xml", '<testsuites><testsuite name="x"><testcase/></testsuite></testsuites>')
    assert not schema.is_valid(str(bad))  # no `tests` on the suite, no `name` on the case
