"""Markdown where a team reviews its changes: `compare BASE NEW --format markdown` (paired
differences, intervals, Holm-adjusted p-values, regressions flagged) and the `markdown` output
format (a run's summary), through the real CLI and store; the rendering of stored comparisons
(tests/data/markdown) for a regression and for no change; the cut at a GitHub comment's size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalyard.cli import cli
from evalyard.markdown import GITHUB_COMMENT_LIMIT, LIMIT, comparison_markdown, escape
from testutil import write

DATA = Path(__file__).resolve().parents[1] / "data" / "markdown"


def invoke(app, *args):
    return CliRunner().invoke(cli, list(args), obj=app, catch_exceptions=False)


def run(app, tmp_path, name, values):
    lines = [json.dumps({"id": f"c{i}", "candidate": "x", "metadata": {"script": v}}) for i, v in enumerate(values)]
    path = write(tmp_path / f"{name}.jsonl", "\n".join(lines) + "\n")
    done = invoke(app, "run", str(path), "-s", "scripted", "-s", "scripted_async", "--name", name, "--json")
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)["run_id"]


BASE = [1.0] * 30 + [0.0] * 10


def test_compare_as_markdown_flags_a_regression_with_holm_adjusted_p(scripted_plugin, tmp_path):
    app = scripted_plugin
    base = run(app, tmp_path, "base", BASE)
    new = run(app, tmp_path, "new", [0.0] * 12 + BASE[12:])
    shown = invoke(app, "compare", "base", "new", "--format", "markdown", "--fail-on-regression")
    assert shown.exit_code == 1  # the regression check still decides the exit status
    text = shown.stdout
    assert text.startswith(f"## evalyard: run {new} (NEW) against {base} (BASE)\n")
    assert "❌ **Regression** in **scripted**, **scripted\\_async**" in text
    assert "| scorer | pairs | base | new | delta | 95% CI | p | p (Holm) | win / loss / tie |  |" in text
    assert "| scripted | 40 | 0.750 | 0.450 | -0.300 |" in text and text.count("❌ regressed") == 2
    assert "2 scorers were tested: read *p (Holm)*" in text
    assert "<summary>scripted: the cases that got worse, worst first</summary>" in text and text.count("</details>") == 2
    # the JSON shape is the one it was: --format json is --json
    as_json = json.loads(invoke(app, "compare", "base", "new", "--format", "json").stdout)
    assert as_json == json.loads(invoke(app, "compare", "base", "new", "--json").stdout)
    assert comparison_markdown(as_json) == text


def test_compare_as_markdown_says_no_regression(scripted_plugin, tmp_path):
    app = scripted_plugin
    run(app, tmp_path, "base", BASE)
    run(app, tmp_path, "new", BASE)
    shown = invoke(app, "compare", "base", "new", "--format", "markdown", "--fail-on-regression")
    assert shown.exit_code == 0
    assert "✅ **No regression** in 2 scorers" in shown.stdout and "❌" not in shown.stdout
    assert "<details>" not in shown.stdout  # no regressed case to list


@pytest.mark.parametrize("name", ["compare_regression", "compare_no_change"])
def test_stored_comparisons_render_as_their_fixtures(name):
    """The fixtures are `compare --json` of two runs, rendered once and read by eye; a change of the
    rendering shows here as a diff of the Markdown."""
    result = json.loads((DATA / f"{name}.json").read_text())
    assert comparison_markdown(result) == (DATA / f"{name}.md").read_text()


def test_a_comparison_too_long_for_a_comment_is_cut_with_a_note():
    result = json.loads((DATA / "compare_regression.json").read_text())
    worst = result["scorers"]["scripted"]["worst_cases"][0]
    result["scorers"]["scripted"]["worst_cases"] = [{**worst, "case_id": f"case-{i:05d}"} for i in range(5000)]
    text = comparison_markdown(result)
    assert len(text) <= LIMIT < GITHUB_COMMENT_LIMIT
    assert "❌ **Regression**" in text and "| scripted | 40 |" in text  # the verdict and the table are kept
    assert "*Truncated to fit a GitHub comment:" in text and text.endswith(f"{result['new']}`.*\n")
    assert text.count("<details>") == text.count("</details>")


def test_text_from_the_data_cannot_break_the_table_or_forge_a_marker():
    assert escape("a|b <!-- evalyard-comment --> *x*\nnext") == "a\\|b &lt;!-- evalyard-comment --&gt; \\*x\\* next"
    result = json.loads((DATA / "compare_regression.json").read_text())
    result["scorers"]["scripted"]["worst_cases"][0]["case_id"] = "x|<!-- evalyard-comment -->"
    assert "<!-- evalyard-comment -->" not in comparison_markdown(result)


def test_the_markdown_output_format_writes_a_runs_summary(scripted_plugin, tmp_path):
    app = scripted_plugin
    target = tmp_path / "summary.md"
    path = write(tmp_path / "c.jsonl", "\n".join(json.dumps({"id": f"c{i}", "candidate": "x",
                                                             "metadata": {"script": v}})
                                                  for i, v in enumerate([1.0, 0.0, 1.0, "raise"])) + "\n")
    done = invoke(app, "run", str(path), "-s", "scripted", "--json", "--output", f"markdown={target}")
    assert done.exit_code == 0, done.output
    run_id = json.loads(done.stdout)["run_id"]
    text = target.read_text()
    assert text.startswith(f"## evalyard run {run_id} (")
    assert "| scorer | n | errors | mean | std | 95% CI | pass |" in text
    assert "| scripted | 3 | 1 | 0.667 |" in text and "- scripted: high 2, low 1" in text
    assert invoke(app, "runs", "export", run_id, "--format", "markdown").stdout == text


def test_bad_format_options_are_refused_in_one_line_and_nothing_is_written(scripted_plugin, tmp_path):
    app = scripted_plugin
    run(app, tmp_path, "base", BASE)
    run(app, tmp_path, "new", BASE)
    junit = tmp_path / "compare.xml"
    both = invoke(app, "compare", "base", "new", "--json", "--format", "markdown", "--junit", str(junit))
    assert both.exit_code == 2 and not junit.exists()
    assert [line for line in both.output.splitlines() if line.startswith("Error")] == \
        ["Error: --json and --format markdown: choose one"]
    unknown = invoke(app, "compare", "base", "new", "--format", "html", "--junit", str(junit))
    assert unknown.exit_code == 2 and "'html' is not one of 'table', 'json', 'markdown'" in unknown.output
    assert not junit.exists()
