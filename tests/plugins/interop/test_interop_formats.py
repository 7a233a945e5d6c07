"""Other tools' results as cases, through the installed evalyard-interop plugin: promptfoo's
results JSON (by name only) and inspect_ai's eval logs (.eval by its ending, .json by name), read
from files the real tools wrote (tests/data/interop/README.md says how), scored again from the
CLI, and bad input as one line naming file, line or record, and field, with nothing stored."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import pytest
from click.testing import CliRunner

from evalyard import InputError
from evalyard.cli import cli
from evalyard.suite_files import load_data_file
from testutil import TESTS

DATA = TESTS / "data" / "interop"
PROMPTFOO = DATA / "promptfoo" / "promptfoo-results.json"
PROMPTFOO_LINES = DATA / "promptfoo" / "promptfoo-results.jsonl"
PROVIDER_ERROR = DATA / "promptfoo" / "promptfoo-provider-error.json"
INSPECT_EVAL = DATA / "inspect" / "tiny-qa.eval"
INSPECT_JSON = DATA / "inspect" / "tiny-qa.json"


def load(app, path, format=None, field_map=None):
    return load_data_file(path, app.registry, field_map or {}, format)


def invoke(app, *args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj=app, catch_exceptions=False)


def stored_runs(app):
    return app.open_store().list_runs()


# -- promptfoo ---------------------------------------------------------------

def test_promptfoo_results_become_one_case_per_test_and_provider(app):
    cases, origins = load(app, PROMPTFOO, "promptfoo")
    assert [c.id for c in cases] == ["t0-p0", "t0-p1", "t1-p0", "t1-p1", "t2-p0", "t2-p1"]
    canned = {c.id: c for c in cases}
    paris = canned["t0-p0"]
    assert paris.input == "Answer briefly: What is the capital of France?"
    assert (paris.candidate, paris.reference) == ("Paris", "Paris")  # the rendered `equals` value
    assert canned["t0-p1"].candidate == paris.input  # promptfoo's echo provider
    assert (canned["t1-p0"].candidate, canned["t1-p0"].reference) == ("5", "4")
    assert paris.metadata["vars"] == {"question": "What is the capital of France?", "expected": "Paris"}
    verdict = paris.metadata["promptfoo"]
    assert verdict["provider"] == "canned" and verdict["provider_id"] == "file://provider.js"
    assert verdict["pass"] is True and verdict["score"] == 1 and verdict["named_scores"] == {"accuracy": 1}
    assert verdict["description"] == "capital" and verdict["eval_id"].startswith("eval-")
    assert canned["t2-p0"].metadata["topic"] == "astronomy"  # the test's own metadata
    assert "_promptfooFileMetadata" not in canned["t2-p0"].metadata
    text = PROMPTFOO.read_text().splitlines()
    starts = sorted(int(o.rpartition(":")[2]) for o in origins)
    for case, origin in zip(cases, origins):  # each origin is the line its row opens on
        line = int(origin.rpartition(":")[2])
        end = next((s for s in starts if s > line), len(text))
        assert text[line - 1].strip() == "{" and f'"id": "{case.metadata["promptfoo"]["result_id"]}"' in "".join(
            text[line - 1:end - 1])


def test_promptfoo_json_lines_give_the_same_cases(app):
    cases, origins = load(app, PROMPTFOO_LINES, "promptfoo")
    (whole, _) = load(app, PROMPTFOO, "promptfoo")
    assert [(c.id, c.input, c.candidate, c.reference) for c in cases] == \
        [(c.id, c.input, c.candidate, c.reference) for c in whole]
    lines = PROMPTFOO_LINES.read_text().splitlines()
    for case, origin in zip(cases, origins):  # each row's own line
        assert case.metadata["promptfoo"]["result_id"] in lines[int(origin.rpartition(":")[2]) - 1]


def test_a_failed_provider_call_is_a_case_without_candidate(app):
    cases, _ = load(app, PROVIDER_ERROR, "promptfoo")
    failed, echoed = cases
    assert failed.candidate is None and failed.metadata["promptfoo"]["error"] == "simulated provider failure"
    assert echoed.candidate == "Answer briefly: Who wrote Hamlet?" and echoed.reference is None  # `contains` only
    result = invoke(app, "run", PROVIDER_ERROR, "--format", "promptfoo", "-s", "json_valid")
    assert result.exit_code == 2
    assert f"{PROVIDER_ERROR}:" in result.output and "field 'candidate'" in result.output
    assert "'t0-p0' has no candidate" in result.output and stored_runs(app) == []


def test_a_model_fills_exactly_the_rows_whose_provider_failed(app, rules):
    model = rules([{"contains": "Who wrote Hamlet?", "content": "William Shakespeare"}])
    result = invoke(app, "run", PROVIDER_ERROR, "--format", "promptfoo", "--field", "reference=expected",
                    "-s", "word_count_match", "--model", model, "--json")
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.stdout)["run_id"]
    candidates = {c.case_id: c for c in app.open_store().candidates(run_id).values()}
    assert candidates["t0-p0"].text == "William Shakespeare" and candidates["t0-p0"].details is not None
    assert candidates["t0-p1"].text == "Answer briefly: Who wrote Hamlet?" and candidates["t0-p1"].details is None


def test_test_vars_can_fill_case_fields(app):
    cases, _ = load(app, PROVIDER_ERROR, "promptfoo", {"reference": "expected", "input": "question"})
    assert cases[1].reference == "Shakespeare" and cases[1].input == "Who wrote Hamlet?"
    (case, *_), _ = load(app, PROMPTFOO, "promptfoo", {"context": "question"})
    assert case.context == ["What is the capital of France?"]


def test_promptfoo_is_chosen_by_name_only(app):
    with pytest.raises(InputError, match="expected a list of cases"):
        load(app, PROMPTFOO)  # plain .json stays the core's format


def test_cli_rescores_promptfoo_outputs_and_stores_the_results(app):
    result = invoke(app, "run", PROMPTFOO, "--format", "promptfoo", "-s", "exact_match", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["cases"] == 6 and data["scorers"]["exact_match"]["mean"] == pytest.approx(2 / 6)
    results = {r.case_id: r.value for r in app.open_store().results(data["run_id"])}
    assert results == {"t0-p0": 1.0, "t0-p1": 0.0, "t1-p0": 0.0, "t1-p1": 0.0, "t2-p0": 1.0, "t2-p1": 0.0}


def test_the_installed_console_script_finds_the_formats(cli_env, evalyard_exe, tmp_path):
    """A fresh process, as a user runs it: the plugin comes from its entry point."""
    cli_env.pop("EVALYARD_LOAD_PLUGINS", None)
    db = tmp_path / "runs.db"
    for path, options in ((PROMPTFOO, ["--format", "promptfoo"]), (INSPECT_EVAL, [])):
        done = subprocess.run([evalyard_exe, "run", str(path), *options, "-s", "exact_match", "--db", str(db),
                               "--json"], env=cli_env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    listed = subprocess.run([evalyard_exe, "runs", "list", "--db", str(db), "--json"], env=cli_env,
                            capture_output=True, text=True, timeout=60, check=True)
    assert len(json.loads(listed.stdout)) == 2


# -- inspect_ai --------------------------------------------------------------

EXPECTED_INSPECT = [
    ("capital-fr/epoch-1", "Paris", "Paris"), ("capital-fr/epoch-2", "Paris.", "Paris"),
    ("add/epoch-1", "5", "4"), ("add/epoch-2", "4", "4"),
    ("3/epoch-1", "Mars", "Mars"), ("3/epoch-2", "It is Mars", "Mars"),
]


@pytest.mark.parametrize("path,format", [(INSPECT_EVAL, None), (INSPECT_JSON, "inspect")])
def test_inspect_logs_become_one_case_per_sample_and_epoch(app, path, format):
    cases, origins = load(app, path, format)
    assert [(c.id, c.candidate, c.reference) for c in cases] == EXPECTED_INSPECT  # in the dataset's order
    first = cases[0]
    assert first.input == "What is the capital of France?" and first.metadata["topic"] == "geography"
    inspect = first.metadata["inspect"]
    assert inspect["sample_id"] == "capital-fr" and inspect["epoch"] == 1 and inspect["model"] == "mockllm/model"
    assert inspect["task"] == "tiny_qa" and inspect["scores"]["match"] == {"value": "C", "answer": "Paris",
                                                                            "explanation": "Paris"}
    chat = cases[4]
    assert chat.input == "system: Answer in one word.\n\nuser: Which planet is known as the red planet?"
    assert chat.metadata["targets"] == ["Mars", "mars"] and chat.metadata["inspect"]["sample_id"] == 3
    if format is None:
        assert origins[0] == f"{INSPECT_EVAL}:samples/capital-fr_epoch_1.json"
    else:
        assert all(o.startswith(f"{INSPECT_JSON}:") and int(o.rpartition(":")[2]) > 1 for o in origins)


def test_inspect_json_logs_need_the_name(app):
    with pytest.raises(InputError, match="expected a list of cases"):
        load(app, INSPECT_JSON)


def test_cli_rescores_an_inspect_log(app):
    result = invoke(app, "run", INSPECT_EVAL, "-s", "exact_match", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # inspect's match() passed 5 of 6 (it accepts "Paris." and "It is Mars"); exact_match is stricter.
    assert data["cases"] == 6 and data["scorers"]["exact_match"]["mean"] == 0.5


def test_a_sample_field_mapped_from_its_metadata(app):
    cases, _ = load(app, INSPECT_EVAL, None, {"reference": "topic"})
    assert cases[0].reference == "geography"


def test_zstandard_missing_is_one_clear_line(app, monkeypatch):
    probe = zipfile.ZipFile(INSPECT_EVAL)
    try:
        probe.read("header.json")
        pytest.skip("this Python reads Zstandard zip members itself")
    except NotImplementedError:
        pass
    finally:
        probe.close()
    monkeypatch.setitem(sys.modules, "zstandard", None)
    with pytest.raises(InputError, match="install the zstandard package"):
        load(app, INSPECT_EVAL)


# -- bad input ---------------------------------------------------------------

def promptfoo_file(tmp_path, mutate):
    """The fixture with its third row spoilt, and the line that row opens on."""
    data = json.loads(PROMPTFOO.read_text())
    marker = data["results"]["results"][2]["id"]  # a row replaced whole has none: its 7 is found instead
    mutate(data)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data, indent=2))
    lines = path.read_text().splitlines()
    found = next((n for n, text in enumerate(lines) if text.strip() == f'"id": "{marker}",'), None)
    if found is None:
        return path, next(n for n, text in enumerate(lines, 1) if text.strip() == "7,")
    return path, next(n for n in range(found, 0, -1) if lines[n - 1] == "      {")


@pytest.mark.parametrize("mutate,where,message", [
    (lambda d: d["results"]["results"][2].__setitem__("testIdx", "x"), "field 'testIdx'", "expected promptfoo's testIdx"),
    (lambda d: d["results"]["results"][2]["prompt"].pop("raw"), "field 'prompt.raw'", "expected the prompt"),
    (lambda d: d["results"]["results"][2].__setitem__("vars", ["q"]), "field 'vars'", "expected an object"),
    (lambda d: d["results"]["results"].__setitem__(2, 7), "", "expected a result object"),
])
def test_a_bad_promptfoo_row_names_its_line_and_field(app, tmp_path, mutate, where, message):
    path, line = promptfoo_file(tmp_path, mutate)
    result = invoke(app, "run", path, "--format", "promptfoo", "-s", "exact_match")
    assert result.exit_code == 2
    output = result.output.strip()
    assert len(output.splitlines()) == 1 and output.startswith(f"Error: {path}:{line}: {where}".rstrip()), output
    assert message in output and stored_runs(app) == []


def test_promptfoo_files_of_another_shape_are_refused(app, tmp_path):
    path = tmp_path / "cases.json"
    path.write_text(json.dumps([{"input": "q", "candidate": "a"}]))
    with pytest.raises(InputError, match=r"cases.json:1: field 'results': expected promptfoo's results"):
        load(app, path, "promptfoo")


def test_a_bad_inspect_json_sample_names_its_line_and_field(app, tmp_path):
    data = json.loads(INSPECT_JSON.read_text())
    data["samples"][1]["target"] = 4
    path = tmp_path / "log.json"
    path.write_text(json.dumps(data, indent=2))
    line = [n for n, text in enumerate(path.read_text().splitlines(), 1) if text == "    {"][1]
    result = invoke(app, "run", path, "--format", "inspect", "-s", "exact_match")
    assert result.exit_code == 2 and result.output.strip() == (
        f"Error: {path}:{line}: field 'target': expected the target as text or a list of texts")
    assert stored_runs(app) == []


def rewrite_archive(source, target, member, transform):
    """A copy of an .eval archive with one member's bytes changed, other members as they were."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            raw = _raw_member(source, info)
            if info.filename == member:
                raw = transform(raw)
            _copy_raw(new, info, raw)
    return target


def _raw_member(path, info):
    import struct

    with open(path, "rb") as handle:
        handle.seek(info.header_offset)
        header = handle.read(30)
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        handle.seek(info.header_offset + 30 + name_length + extra_length)
        return handle.read(info.compress_size)


def _copy_raw(archive, info, raw):
    import copy

    clone = copy.copy(info)
    clone.compress_size = len(raw)
    clone.header_offset = archive.fp.tell()
    archive.fp.write(clone.FileHeader())
    archive.fp.write(raw)
    archive.start_dir = archive.fp.tell()
    archive.filelist.append(clone)
    archive.NameToInfo[clone.filename] = clone


def test_a_damaged_eval_member_names_the_member(app, tmp_path):
    path = rewrite_archive(INSPECT_EVAL, tmp_path / "damaged.eval", "samples/add_epoch_2.json",
                           lambda raw: raw[:-8] + bytes(8))
    result = invoke(app, "run", path, "-s", "exact_match")
    assert result.exit_code == 2
    assert result.output.strip().startswith(f"Error: {path}:samples/add_epoch_2.json: damaged archive member")
    assert stored_runs(app) == []


def test_a_bad_eval_sample_names_the_member_and_field(app, tmp_path):
    path = tmp_path / "plain.eval"
    header = json.dumps({"eval": {"task": "t", "config": {"epochs": 1}}})
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:  # as older inspect wrote them
        archive.writestr("header.json", header)
        archive.writestr("samples/1_epoch_1.json", json.dumps({"id": 1, "epoch": 1, "input": "q", "target": "a",
                                                               "output": {"completion": "a"}}))
        archive.writestr("samples/2_epoch_1.json", json.dumps({"id": 2, "epoch": 1, "input": {"q": 1}}))
    result = invoke(app, "run", path, "-s", "exact_match")
    assert result.exit_code == 2 and result.output.strip() == (
        f"Error: {path}:samples/2_epoch_1.json: field 'input': expected the input as text or a list of chat messages")
    assert stored_runs(app) == []


def test_a_file_that_is_not_an_eval_archive(app, tmp_path):
    path = tmp_path / "log.eval"
    path.write_text("{}")
    with pytest.raises(InputError, match=r"log.eval: not an inspect_ai .eval log \(not a zip archive"):
        load(app, path)


def test_record_lines_follow_the_json_not_its_look(app):
    from evalyard_interop.records import array_item_lines

    text = '{"a": "x [ \\" ]", "b": {"results": 1},\n "results": [\n {"k": "]"},\n\n  7, [1,\n2], {}]}'
    assert array_item_lines(text, ("results",)) == [3, 5, 5, 6]
    assert array_item_lines(text, ("missing",)) is None and array_item_lines("[1]", ("results",)) is None


# -- inspect_ai: an agent's message history ------------------------------------

INSPECT_AGENT_EVAL = DATA / "inspect" / "tiny-agent.eval"
INSPECT_AGENT_JSON = DATA / "inspect" / "tiny-agent.json"


@pytest.mark.parametrize("path,format", [(INSPECT_AGENT_EVAL, None), (INSPECT_AGENT_JSON, "inspect")])
def test_an_agent_log_gives_each_sample_its_messages_and_tools(app, path, format):
    cases, _ = load(app, path, format)
    by_id = {case.id: case for case in cases}
    oslo = by_id["oslo-paris"]
    assert [m["role"] for m in oslo.messages] == ["system", "user", "assistant", "tool", "assistant", "tool",
                                                  "assistant"]
    first_call = oslo.messages[2]["tool_calls"][0]
    assert first_call["type"] == "function" and first_call["function"]["name"] == "get_weather"
    assert json.loads(first_call["function"]["arguments"]) == {"city": "Oslo", "unit": "celsius"}
    assert oslo.messages[3] == {"role": "tool", "content": "9 C, rain", "tool_call_id": first_call["id"]}
    assert oslo.messages[-1]["content"] == oslo.candidate == "Paris is warmer: 18 C against 9 C."
    (tool,) = oslo.tools
    assert tool["function"]["name"] == "get_weather" and tool["function"]["parameters"]["required"] == ["city"]
    assert [m["role"] for m in by_id["hello"].messages] == ["system", "user", "assistant"]


def test_the_agent_scorers_judge_an_inspect_log(app):
    result = invoke(app, "run", INSPECT_AGENT_EVAL, "--json", "-s", "agent/tool_calls:mode=ignore,max_steps=1,schema=true")
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.stdout)["run_id"]
    values = {row.case_id: row.value for row in app.open_store().results(run_id)}
    assert values == {"paris": 1.0, "oslo-paris": 0.0, "hello": 1.0}  # two calls where one was allowed


def test_a_bad_message_in_an_inspect_log_names_its_line_and_field(app, tmp_path):
    data = json.loads(INSPECT_AGENT_JSON.read_text())
    sample = next(s for s in data["samples"] if s["id"] == "oslo-paris")
    sample["messages"][3]["tool_call_id"] = "nobody-called-this"
    path = tmp_path / "log.json"
    path.write_text(json.dumps(data, indent=2))
    result = invoke(app, "run", path, "--format", "inspect", "-s", "exact_match")
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"Error: {path}:") and "field 'messages[3].tool_call_id'" in line
    assert "'nobody-called-this', which no earlier tool call has as its id" in line
    assert stored_runs(app) == []
