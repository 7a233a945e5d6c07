"""Output formats are registered sinks: `runs export --format NAME` and `run --output NAME[=TARGET]`
reach the core's and a plugin's alike; `--junit` and `--otel` stay as aliases."""

from __future__ import annotations

import csv
import json
import subprocess
import xml.etree.ElementTree as ET

from click.testing import CliRunner

import markdown_sink
from evalyard.cli import cli
from testutil import write


def invoke(app, *args):
    return CliRunner().invoke(cli, list(args), obj=app, catch_exceptions=False)


def cases(tmp_path, scripts, name="cases.jsonl"):
    lines = [json.dumps({"id": f"c{i}", "candidate": "x", "metadata": {"script": s}}) for i, s in enumerate(scripts)]
    return str(write(tmp_path / name, "\n".join(lines) + "\n"))


def test_a_plugin_adds_an_output_format_in_one_file(scripted_plugin, tmp_path):
    app = scripted_plugin
    app.register_plugin(markdown_sink, name="markdown_sink")
    target = tmp_path / "results.md"
    result = invoke(app, "run", cases(tmp_path, [1.0, 0.0, "raise"]), "-s", "scripted", "--json",
                    "--output", f"markdown-table={target}")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["outputs"] == [{"format": "markdown-table", "target": str(target)}]
    lines = target.read_text().splitlines()
    assert lines[0] == f"# run {data['run_id']}"
    assert lines[1] == "" and [line.split(" | ")[0] for line in lines[4:]] == ["| c0", "| c1", "| c2"]
    exported = invoke(app, "runs", "export", data["run_id"], "--format", "markdown-table")
    assert exported.exit_code == 0 and exported.output == target.read_text()


def test_run_writes_every_output_asked_for_and_they_agree_with_export(scripted_plugin, tmp_path):
    app = scripted_plugin
    out = {name: tmp_path / f"out.{name}" for name in ("jsonl", "csv", "html", "xml")}
    result = invoke(app, "run", cases(tmp_path, [1.0, 0.25, "raise"]), "-s", "scripted", "--json",
                    "--output", f"jsonl={out['jsonl']}", "--output", f"csv={out['csv']}",
                    "--output", f"html={out['html']}", "--junit", str(out["xml"]))
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.stdout)["run_id"]
    assert out["jsonl"].read_text() == invoke(app, "runs", "export", run_id).output
    rows = list(csv.DictReader(out["csv"].open()))
    assert [(r["case_id"], r["value"]) for r in rows] == [("c0", "1.0"), ("c1", "0.25"), ("c2", "")]
    assert run_id in out["html"].read_text() and out["html"].read_text().lstrip().startswith("<!")
    suite = ET.parse(out["xml"]).getroot().find("testsuite")
    assert suite.get("tests") == "3" and suite.get("failures") == "1" and suite.get("errors") == "1"


def test_an_output_without_a_target_goes_to_its_default_file(scripted_plugin, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke(scripted_plugin, "run", cases(tmp_path, [1.0]), "-s", "scripted", "--json", "--output", "csv")
    run_id = json.loads(result.stdout)["run_id"]
    assert (tmp_path / f"evalyard-{run_id}.csv").read_text().startswith("case_id,scorer,value")


def test_an_unknown_output_is_refused_before_anything_is_stored(scripted_plugin, tmp_path):
    result = invoke(scripted_plugin, "run", cases(tmp_path, [1.0]), "-s", "scripted", "--output", "nosuch")
    assert result.exit_code == 2
    assert "unknown output format 'nosuch'" in result.output and "jsonl" in result.output
    assert invoke(scripted_plugin, "runs", "list", "--json").output.strip() == "[]"
    bad = invoke(scripted_plugin, "run", cases(tmp_path, [1.0]), "-s", "scripted", "--output", "csv=")
    assert bad.exit_code == 2 and "expected NAME or NAME=TARGET" in bad.output


def test_export_reaches_the_report_and_junit(scripted_plugin, tmp_path):
    app = scripted_plugin
    run_id = json.loads(invoke(app, "run", cases(tmp_path, [1.0, 0.0]), "-s", "scripted", "--json").stdout)["run_id"]
    page = tmp_path / "page.html"
    assert invoke(app, "runs", "export", run_id, "--format", "html", "-o", str(page)).exit_code == 0
    assert run_id in page.read_text()
    xml = invoke(app, "runs", "export", run_id, "--format", "junit").output
    assert ET.fromstring(xml.split("?>", 1)[1]).get("tests") == "2"


def test_plugins_lists_the_output_hook(scripted_plugin):
    data = json.loads(invoke(scripted_plugin, "plugins", "--json", "--all").output)
    builtin = {p["name"]: p for p in data}["evalyard.builtins.outputs"]
    assert builtin["hooks"] == ["register_outputs"]


def test_run_json_stays_valid_json_whatever_a_library_prints(tmp_path, cli_env, evalyard_exe):
    """A scorer (standing in for Ray's "Raylet is terminated" notice) prints to Python's stdout
    and to file descriptor 1 while the run goes on and at exit: stdout holds the JSON alone."""
    data_file = cases(tmp_path, ["print", "print", 1.0])
    done = subprocess.run([evalyard_exe, "run", data_file, "-s", "scripted", "--json"], env=cli_env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)  # nothing but the run's JSON
    assert data["scorers"]["scripted"]["count"] == 3
    assert "a library's notice while scoring c0" in done.stderr
    assert "a notice written to file descriptor 1" in done.stderr and "a notice at exit" in done.stderr
