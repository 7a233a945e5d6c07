"""trust-eval's data format through the plugin: chosen by name (--format trust-eval, format:) or
by its own file endings, never by content; cases, JSON Lines, one-line errors; plain evalyard
files, whatever their keys, still read by the core's formats with the plugin installed."""

from __future__ import annotations

import json

import pytest
from trust_helpers import ASQA, doc, invoke, item, run_json

from evalyard.suite_files import load_data_file

GOOD = item("Paris [1].", [["Paris"]], [doc("Paris", "Paris is the capital.", 1)], question="Capital?")


def load(app, path, format=None):
    return load_data_file(path, app.registry, format=format)


def test_a_trust_eval_file_becomes_cases(app):
    cases, origins = load(app, ASQA, format="trust-eval")
    first = cases[0]
    assert first.id == "asqa-01" and first.input == "Who wrote the novel 'Frankenstein'?"
    assert first.candidate == "Frankenstein was written by Mary Shelley [1]."
    assert first.context[0].startswith("Title: Frankenstein\nFrankenstein; or,")
    assert first.metadata["answers"] == [["Mary Shelley", "Mary Wollstonecraft Shelley"]]
    assert first.metadata["docs"][0]["answers_found"] == [1] and "note" in first.metadata
    assert origins[0] == f"{ASQA}:3" and origins[1] == f"{ASQA}:38"  # the line each record opens on


def test_jsonl_records_and_missing_ids(app, tmp_path):
    path = tmp_path / "items.trust.jsonl"  # the format's own ending: no --format needed
    path.write_text(json.dumps(GOOD) + "\n\n" + json.dumps({**GOOD, "output": "Lyon."}) + "\n")
    cases, origins = load(app, path)
    assert [c.id for c in cases] == ["1", "2"] and origins == [f"{path}:1", f"{path}:3"]
    assert run_json(app, path, "-s", "trust_correctness")["scorers"]["trust_correctness"]["mean"] == 0.5


def test_plain_evalyard_files_still_load_through_the_core(app, tmp_path):
    path = tmp_path / "plain.json"
    path.write_text(json.dumps([{"id": "a", "candidate": "x", "reference": "x"}]))
    (case,), _ = load(app, path)
    assert case.candidate == "x" and case.reference == "x"
    lines = tmp_path / "plain.jsonl"
    lines.write_text(json.dumps({"id": "b", "input": "q", "candidate": "y"}) + "\n")
    (case,), _ = load(app, lines)
    assert case.input == "q" and case.metadata == {}


def test_trust_eval_records_in_a_plain_jsonl_file_are_read_as_trust_eval_only_when_asked(app, tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps(GOOD) + "\n")
    (case,), _ = load(app, path)  # evalyard's own JSONL: the trust-eval keys are kept as metadata
    assert case.input is None and case.metadata["question"] == "Capital?"
    (case,), _ = load(app, path, format="trust-eval")
    assert case.input == "Capital?" and case.context == ["Title: Paris\nParis is the capital."]
    data = run_json(app, path, "--format", "trust-eval", "-s", "trust_correctness")
    assert data["scorers"]["trust_correctness"]["mean"] == 1.0


def test_the_common_rag_shape_loads_as_plain_cases_through_its_field_map(app, tmp_path):
    """{"id", "question", "docs", "response", "gold"} mapped by a suite's fields: is evalyard's own
    JSONL with the trust plugin installed (it once took it for trust-eval data and refused it)."""
    path = tmp_path / "rag.jsonl"
    path.write_text(json.dumps({"id": "q1", "question": "Capital of France?", "docs": ["Paris is the capital."],
                                "response": "Paris", "gold": "Paris"}) + "\n")
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: rag\ndata: rag.jsonl\n"
                     "fields: {input: question, context: docs, candidate: response, reference: gold}\n"
                     "scorers: [exact_match]\n")
    data = run_json(app, suite)
    assert data["scorers"]["exact_match"]["mean"] == 1.0
    cases, _ = load_data_file(path, app.registry, {"input": "question", "context": "docs", "candidate": "response",
                                                   "reference": "gold"})
    assert cases[0].context == ["Paris is the capital."] and cases[0].input == "Capital of France?"


def test_a_suite_names_the_format(app, tmp_path):
    (tmp_path / "items.json").write_text(json.dumps({"data": [GOOD]}))
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: t\ndata: items.json\nformat: trust-eval\nscorers: [trust_correctness]\n")
    assert run_json(app, suite)["scorers"]["trust_correctness"]["mean"] == 1.0
    suite.write_text("name: t\ndata: items.json\nformat: trust\nscorers: [trust_correctness]\n")
    result = invoke(app, "run", suite)
    assert result.exit_code == 2 and "unknown data format 'trust'" in result.output
    assert "trust-eval (.trust.json, .trust.jsonl)" in result.output  # the known formats, from the registry


def test_a_field_mapped_jsonl_works_with_context_and_answers_found(app, tmp_path):
    path = tmp_path / "rag.jsonl"
    path.write_text(json.dumps({"id": "r1", "input": "Capital?", "answer": "Paris is the capital [1].",
                                "context": ["Paris is the capital."], "answers": [["Paris"]],
                                "answers_found": [[1]]}) + "\n")
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: rag\ndata: rag.jsonl\nfields: {candidate: answer}\nscorers:\n"
                     "  - name: trust_score\n    config: {entailment: lexical}\n")
    aggregate = run_json(app, suite)["scorers"]["trust_score"]["aggregate"]
    assert aggregate["answered_citation_rec"] == 100.0 and aggregate["calib_str_em_f1"] == 100.0


@pytest.mark.parametrize("record, field", [
    ({**GOOD, "question": 3}, "question"),
    ({**GOOD, "answers": []}, "answers"),
    ({**GOOD, "answers": ["Paris"]}, "answers[0]"),
    ({**GOOD, "docs": {"title": "x"}}, "docs"),
    ({**GOOD, "docs": [{"title": "x", "text": "y", "answers_found": [1, 0]}]}, "docs[0].answers_found"),
    ({**GOOD, "docs": [{"title": "x", "answers_found": [1]}]}, "docs[0].text"),
    ({**GOOD, "output": ["a", "b"]}, "output"),
])
def test_bad_records_are_one_line_errors_naming_file_line_and_field(app, tmp_path, record, field):
    path = tmp_path / "bad.trust.json"
    path.write_text('{"data": [\n' + json.dumps(GOOD) + ",\n" + json.dumps(record) + "\n]}\n")
    result = invoke(app, "run", path, "-s", "trust_score:entailment=lexical")
    assert result.exit_code == 2
    message = result.output.strip()
    assert "\n" not in message and f"{path}:3" in message and f"field '{field}'" in message


def test_a_case_without_gold_answers_is_a_recorded_error_not_a_zero(app, tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_text(json.dumps({"id": "ok", "candidate": "Paris", "context": ["Paris."], "answers": [["Paris"]],
                                "answers_found": [[1]]}) + "\n"
                    + json.dumps({"id": "no-answers", "candidate": "Paris", "answers": "Paris"}) + "\n")
    data = run_json(app, path, "-s", "trust_refusal")
    stats = data["scorers"]["trust_refusal"]
    assert stats["errors"] == 1 and stats["aggregate"]["num_errors"] == 1 and stats["aggregate"]["num_samples"] == 1


def test_unknown_modes_and_backends_are_usage_errors(app):
    result = invoke(app, "run", ASQA, "--format", "trust-eval", "-s", "trust_score:mode=em7")
    assert result.exit_code == 2 and "mode" in result.output
    result = invoke(app, "run", ASQA, "--format", "trust-eval", "-s", "trust_score:entailment=t5")
    assert result.exit_code == 2 and "unknown entailment backend 't5'" in result.output
