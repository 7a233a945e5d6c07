"""The answer as a user reads it: extraction steps (code fence, regex, marker, JSON path, reasoning
removed) declared on the command line, per scorer or in a suite; the raw answer stays stored,
what the scorer read is in its details, and an answer where a step finds nothing is that case's
error, never a 0."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from testutil import error_lines

from evalyard.cli import cli
from evalyard.errors import InputError
from evalyard.extraction import ExtractionFailed, parse_extraction

ANSWER = "Let me think.\n\n```python\ndef f(x):\n    return x\n```\n\nUse it so:\n```\nf(1)\n```\n"


@pytest.mark.parametrize("steps, text, expected", [
    ("code", ANSWER, "def f(x):\n    return x\n"),
    ("code:python", "```\nf(1)\n```\n```python\nreal\n```", "real\n"),
    ("code:python", "```\nplain\n```", "plain\n"),
    ("code", "def f():\n    pass", "def f():\n    pass"),  # no fence at all: the answer is the code
    ("code", "~~~py\nx = 1\n~~~", "x = 1\n"),
    (r"regex:answer is (\d+)", "so the answer is 12, not 13", "12"),
    (r"regex:\d+", "a 7 and an 8", "7"),
    ("after:####", "3 + 4 = 7\n#### 7", "7"),
    ("after:####", "#### 1 then #### 2 ", "2"),
    ("json:answer", '{"answer": "Paris"}', "Paris"),
    ("json:items.1.score", 'Here:\n```json\n{"items": [{}, {"score": 0.5}]}\n```', "0.5"),
    ("json:items", '{"items": [1, 2]}', "[1, 2]"),
    ("drop_reasoning", "<think>4? no, 5</think>\n5", "5"),
    ("drop_reasoning", "<THINKING>a</THINKING>b<reasoning>c</reasoning>d", "bd"),
    (["drop_reasoning", "after:####"], "<think>#### 9</think>so #### 8", "8"),
    ("strip", "  x \n", "x"),
])
def test_each_step_reads_what_a_person_would(steps, text, expected):
    assert parse_extraction(steps)(text) == expected


@pytest.mark.parametrize("steps, text, why", [
    ("code", "```python\ndef f(): pass\n", "never closed"),
    ("code", "  ", "empty"),
    ("code:python", "```rust\nfn f() {}\n```", "no fenced block of python"),
    ("regex:(\\d+)", "no digits", "no match"),
    ("regex:(a)|(b)", "b", "did not take part"),
    ("after:####", "7", "no '####'"),
    ("after:####", "7 ####  ", "nothing after"),
    ("json:answer", "Paris", "not JSON"),
    ("json:answer", '{"answer": null}', "null"),
    ("json:a.5", '{"a": [1]}', "no '5'"),
    ("drop_reasoning", "<think>still going", "never closes"),
    ("drop_reasoning", "<think>all</think>  ", "all reasoning"),
])
def test_a_step_that_finds_nothing_says_so(steps, text, why):
    with pytest.raises(ExtractionFailed, match=why):
        parse_extraction(steps)(text)


@pytest.mark.parametrize("steps, message", [
    ("fence", "unknown extraction step 'fence'"),
    ("regex", "needs an argument"),
    ("regex:(", "does not compile"),
    ("strip:x", "takes no argument"),
    ([], "at least one"),
])
def test_a_bad_step_is_refused(steps, message):
    with pytest.raises(InputError, match=message):
        parse_extraction(steps)


def write_cases(path, candidates: dict[str, str]):
    path.write_text("".join(json.dumps({"id": case_id, "input": "q", "candidate": text, "reference": "1"}) + "\n"
                            for case_id, text in candidates.items()))
    return path


CANDIDATES = {"marked": "2 - 1 = 1\n#### 1", "fenced-half": "So half.\n#### 0.5", "unmarked": "I think 1"}


def invoke(app, *args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj=app, catch_exceptions=False)


def test_extract_on_the_command_line_scores_what_it_reads_and_keeps_the_raw_answer(scripted_plugin, tmp_path):
    data = write_cases(tmp_path / "cases.jsonl", CANDIDATES)
    result = invoke(scripted_plugin, "run", data, "-s", "candidate_value", "--extract", "after:####", "--json")
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.stdout)["run_id"]
    store = scripted_plugin.open_store()
    rows = {r.case_id: r for r in store.results(run_id)}
    assert rows["marked"].value == 1.0 and rows["marked"].details["extracted"] == "1"
    assert rows["fenced-half"].value == 0.5
    assert rows["unmarked"].value is None
    assert rows["unmarked"].error == "extraction 'after:####' found nothing: no '####' in the answer"
    assert store.candidates(run_id)["marked"].text == CANDIDATES["marked"]  # the raw answer, as written
    assert store.get_run(run_id).scorers[0]["extract"] == ["after:####"]

    unread = invoke(scripted_plugin, "run", data, "-s", "candidate_value", "--json")
    summary = json.loads(unread.stdout)["scorers"]["candidate_value"]
    assert summary["errors"] == 3  # as written, no answer is a number: errors, never zeros


def test_extract_per_scorer_and_in_a_suite(scripted_plugin, tmp_path):
    data = write_cases(tmp_path / "cases.jsonl", {"a": "<think>maybe 2</think>#### 1"})
    result = invoke(scripted_plugin, "run", data, "-s", "candidate_value", "-s", "contains",
                    "--extract", "candidate_value=drop_reasoning", "--extract", "candidate_value=after:####", "--json")
    assert result.exit_code == 0, result.output
    run = scripted_plugin.open_store().get_run(json.loads(result.stdout)["run_id"])
    assert [s.get("extract") for s in run.scorers] == [["drop_reasoning", "after:####"], None]
    assert json.loads(result.stdout)["scorers"]["candidate_value"]["mean"] == 1.0

    suite = tmp_path / "suite.yaml"
    suite.write_text(f"name: s\ndata: {data.name}\nextract: [drop_reasoning, 'after:####']\n"
                     "scorers:\n  - candidate_value\n  - name: contains\n    extract: strip\n")
    result = invoke(scripted_plugin, "run", suite, "--json")
    assert result.exit_code == 0, result.output
    run = scripted_plugin.open_store().get_run(json.loads(result.stdout)["run_id"])
    assert [s.get("extract") for s in run.scorers] == [["drop_reasoning", "after:####"], ["strip"]]


@pytest.mark.parametrize("args, message", [
    (["--extract", "fence"], "--extract 'fence': expected [SCORER=]STEP"),
    (["--extract", "regex:("], "does not compile"),
    (["--extract", "nobody=code"], "scorer 'nobody' is not part of this run"),
])
def test_a_bad_extract_option_is_one_line_and_stores_nothing(scripted_plugin, tmp_path, args, message):
    data = write_cases(tmp_path / "cases.jsonl", CANDIDATES)
    result = invoke(scripted_plugin, "run", data, "-s", "candidate_value", *args)
    assert result.exit_code == 2
    (line,) = error_lines(result.output)
    assert message in line
    assert scripted_plugin.open_store().list_runs() == []


def test_a_bad_suite_extract_names_its_line_and_field(scripted_plugin, tmp_path):
    data = write_cases(tmp_path / "cases.jsonl", CANDIDATES)
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"name: s\ndata: {data.name}\nscorers:\n  - name: candidate_value\n    extract: 'json:'\n")
    result = invoke(scripted_plugin, "run", suite)
    assert result.exit_code == 2
    assert f"{suite}:5" in result.output and "scorers.candidate_value.extract" in result.output


def test_generated_epochs_are_each_read(scripted_plugin, tmp_path):
    data = tmp_path / "cases.jsonl"
    data.write_text(json.dumps({"id": "a", "input": "q", "metadata": {
        "answers": ["```\n1\n```", "no fence, just 0", "```\n0.5"]}}) + "\n")
    result = invoke(scripted_plugin, "run", data, "-g", "per_epoch", "-s", "candidate_value", "--extract", "code",
                    "--epochs", "3", "--json")
    assert result.exit_code == 0, result.output
    from evalyard.store.trials import case_trials

    trials = case_trials(scripted_plugin.open_store(), json.loads(result.stdout)["run_id"], "a")["scores"]
    assert [t["value"] for t in trials] == [1.0, None, None]
    assert "could not convert" in trials[1]["error"] and "never closed" in trials[2]["error"]


def test_a_scorer_that_does_not_read_the_answer_is_left_alone(scripted_plugin, tmp_path):
    """`--extract` for every scorer: a scorer of the reference alone in the same run is not failed
    by an answer where the step finds nothing."""
    data = tmp_path / "cases.jsonl"
    data.write_text(json.dumps({"id": "a", "input": "q", "candidate": "no marker here", "reference": "two words"}) + "\n")
    result = invoke(scripted_plugin, "run", data, "-s", "candidate_value", "-s", "reference_words",
                    "--extract", "after:####", "--json")
    assert result.exit_code in (0, 1), result.output
    run_id = json.loads(result.stdout)["run_id"]
    store = scripted_plugin.open_store()
    rows = {r.scorer: r for r in store.results(run_id)}
    assert "found nothing" in rows["candidate_value"].error
    assert rows["reference_words"].error is None and rows["reference_words"].value == 2.0
    assert [s.get("extract") for s in store.get_run(run_id).scorers] == [["after:####"], None]
