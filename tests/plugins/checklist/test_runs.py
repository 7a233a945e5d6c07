"""The checklist scorer in real runs: concurrency and the cache, checklists generated inside a run and
stored with it, the logprob fallback, custom checklist scorers, and tick / rocketeval end to end
through the fake OpenAI server (litellm's openai provider over HTTP)."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

import evalyard
from evalyard.cli import cli
from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig
from evalyard_checklist import register_checklist_scorer

QUESTIONS = [f"Does the answer mention point {n}?" for n in range(1, 9)]


def invoke(app, *args):
    return CliRunner().invoke(cli, list(args), obj=app, catch_exceptions=False)


def write_suite(path, cases, **extra):
    path.write_text(yaml.safe_dump({"name": path.stem, "cases": cases, **extra}, sort_keys=False))
    return str(path)


def eight_item_cases():
    return [{"id": f"c{n}", "input": f"Explain topic {n} in eight points.", "candidate": f"Answer {n}.",
             "metadata": {"checklist": QUESTIONS}} for n in range(2)]


def test_item_mode_with_8_items_at_concurrency_16_makes_8_calls_per_case_and_a_rerun_none(app, tmp_path, rules):
    model = rules([{"contains": "point 3", "content": '{"answer": "NO"}'}, {"content": '{"answer": "YES"}'}])
    suite = write_suite(tmp_path / "eight.yaml", eight_item_cases())
    runs = []
    for _ in range(2):
        result = invoke(app, "run", suite, "-s", "checklist:mode=item", "--judge-model", model,
                        "--concurrency", "16", "--json")
        assert result.exit_code == 0, result.output
        runs.append(json.loads(result.stdout))
    first, second = runs
    assert first["usage"]["calls"] == 16 and first["usage"]["requests"] == 16 and first["usage"]["cache_hits"] == 0
    assert second["usage"]["calls"] == 16 and second["usage"]["cache_hits"] == 16 and second["usage"]["requests"] == 0
    for run in runs:
        assert run["scorers"]["checklist"]["mean"] == pytest.approx(7 / 8)
        assert run["scorers"]["checklist"]["aggregate"]["micro_pass_rate"] == pytest.approx(14 / 16)
    results = app.open_store().results(first["run_id"])
    assert [r.usage["calls"] for r in results] == [8, 8]
    assert all(r.details["num_calls"] == 8 and r.details["scoring_method"] == "item" for r in results)


def test_a_checklist_generated_inside_a_run_is_stored_with_its_result_and_cached(app, tmp_path, rules):
    model = rules([
        {"template": "checklist/gen_tick", "content": {"items": [{"question": "Is it polite?"},
                                                                 {"question": "Does it say Monday?"}]}},
        {"template": "checklist/score_batch", "content": {"answers": [{"question_index": 1, "answer": "YES"},
                                                                      {"question_index": 2, "answer": "NO"}]}}])
    cases = [{"id": "mail", "input": "Tell the team the meeting moved to Monday.", "candidate": "Hi, it moved."}]
    suite = write_suite(tmp_path / "gen.yaml", cases)
    first = json.loads(invoke(app, "run", suite, "-s", "checklist:generator=tick", "--judge-model", model,
                              "--json").stdout)
    second = json.loads(invoke(app, "run", suite, "-s", "checklist:generator=tick", "--judge-model", model,
                               "--json").stdout)
    assert first["usage"]["calls"] == 2 and second["usage"]["cache_hits"] == 2
    (result,) = app.open_store().results(first["run_id"])
    assert result.value == 0.5
    assert result.details["checklist"]["generated"] is True
    assert [i["question"] for i in result.details["checklist"]["items"]] == ["Is it polite?", "Does it say Monday?"]
    assert result.details["generation"]["pipeline"] == "tick" and result.usage["calls"] == 2
    exported = invoke(app, "runs", "export", first["run_id"])
    assert exported.exit_code == 0 and "Does it say Monday?" in exported.output


def test_a_model_without_logprobs_falls_back_explicitly(app, tmp_path, rules):
    model = rules([{"content": '{"answer": "YES"}'}])
    cases = [{"id": "a", "input": "Say hi.", "candidate": "hi", "metadata": {"checklist": ["Does it greet?"]}}]
    suite = write_suite(tmp_path / "nolp.yaml", cases, models={model: {"supports_logprobs": False}})
    data = json.loads(invoke(app, "run", suite, "-s", "checklist:mode=item,primary_metric=normalized",
                             "--judge-model", model, "--json").stdout)
    (result,) = app.open_store().results(data["run_id"])
    assert result.details["logprobs_used"] is False and "does not give logprobs" in result.details["logprob_fallback"]
    assert result.details["items"][0]["confidence"] is None and result.value == 1.0


def test_configuration_mistakes_are_one_line_exit_2(app, tmp_path, rules):
    suite = write_suite(tmp_path / "s.yaml", eight_item_cases())
    model = rules([{"content": "x"}])
    for option, message in (("checklist:mode=batch,use_logprobs=true", "needs mode=item"),
                            ("checklist:template=checklist/score_batch,mode=item", "not a item-mode"),
                            ("checklist:checklists=/nonexistent.jsonl", "cannot read checklists file")):
        result = invoke(app, "run", suite, "-s", option, "--judge-model", model)
        assert result.exit_code == 2 and message in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1
    no_checklist = write_suite(tmp_path / "n.yaml", [{"id": "x", "input": "i", "candidate": "c"}])
    result = invoke(app, "run", no_checklist, "-s", "checklist", "--judge-model", model)
    assert result.exit_code == 2 and "metadata.checklist" in result.output


CUSTOM_ITEM = """---
description: House checklist prompt
fields: [input, candidate]
answer: binary
variables: {question: ""}
---
HOUSE RULES. Request: {{ input }} Reply: {{ candidate }} Rule: {{ question }}
"""


def test_custom_checklist_scorers_from_python_and_from_a_template_file(app, tmp_path, rules):
    model = rules([{"contains": "HOUSE RULES", "content": '{"answer": "NO"}'},
                   {"contains": "OVERRIDDEN", "content": '{"answers": []}'},
                   {"content": '{"answer": "YES"}'}])
    cases = [{"id": "a", "input": "Say hi.", "candidate": "hi",
              "metadata": {"checklist": [{"question": "Greets?", "weight": 80}, {"question": "Short?", "weight": 20}]}}]
    scorer = register_checklist_scorer("house", template=CUSTOM_ITEM, mode="item", primary_metric="weighted", app=app)
    run = evalyard.evaluate(cases, [scorer], app=app, judge_model=model)
    (result,) = run.results
    assert result["value"] == 0.0 and result["details"]["template"] == "checklist_custom/house"
    # a user's template of the built-in name replaces the plugin's batch prompt
    prompts = tmp_path / "prompts"
    (prompts / "checklist").mkdir(parents=True)
    (prompts / "checklist" / "score_batch.jinja").write_text(
        "---\nfields: [input, candidate]\nanswer: binary\nvariables: {checklist: ''}\n---\n"
        "OVERRIDDEN {{ input }} {{ candidate }} {{ checklist }}\n")
    app.use_prompt_dirs([prompts])
    run = evalyard.evaluate(cases, ["checklist:missing=no"], app=app, judge_model=model)
    (result,) = run.results
    assert result["value"] == 0.0 and result["details"]["defaulted_to_no"] == ["q1", "q2"]
    with pytest.raises(evalyard.ConfigError, match="variables"):
        register_checklist_scorer("bad", template=CUSTOM_ITEM, mode="batch")


@pytest.mark.parametrize("pipeline", ["tick", "rocketeval"])
def test_tick_and_rocketeval_end_to_end_through_the_fake_openai_server(app, tmp_path, pipeline):
    with FakeOpenAIServer(FakeServerConfig(seed=3)) as server:
        model = "openai/fake-judge"
        settings = {model: {"api_base": server.base_url, "supports_schema": True, "supports_logprobs": True}}
        cases = [{"id": f"q{n}", "input": f"Question {n}?", "reference": f"Answer {n}.", "candidate": f"Answer {n}."}
                 for n in range(3)]
        suite = write_suite(tmp_path / "fake.yaml", cases, models=settings)
        output = tmp_path / "cl.jsonl"
        # the fake server fills a schema with one item: below tick's default min_items of 2
        refused = invoke(app, "checklist", "generate", suite, "-p", pipeline, "-m", model, "-o", str(output))
        assert refused.exit_code == (1 if pipeline == "tick" else 0)
        made = invoke(app, "checklist", "generate", suite, "-p", pipeline, "-m", model, "-o", str(output),
                      "-O", "min_items=1")
        assert made.exit_code == 0, made.output
        scorer = made.output.split('-s "', 1)[1].split('"', 1)[0]
        data = json.loads(invoke(app, "run", suite, "-s", scorer, "--judge-model", model, "--json").stdout)
        assert data["scorers"]["checklist"]["errors"] == 0 and data["usage"]["calls"] == 3
        for result in app.open_store().results(data["run_id"]):
            item = result.details["items"][0]
            assert item["answer"] in ("yes", "no")
            if pipeline == "rocketeval":
                assert result.details["logprobs_used"] is True and 0 <= item["confidence"] <= 1
                assert item["confidence_level"] in ("no_10", "no_30", "unsure", "yes_70", "yes_90")
                assert result.value == pytest.approx(item["confidence"])
        # tick: min_items=1 changes the prompt, so the second generation asks again; rocketeval's default
        # min_items is 1, so its second generation is answered from the cache
        assert server.app.stats.requests == (9 if pipeline == "tick" else 6)


def test_a_template_file_declares_a_checklist_scorer_of_its_own(app, tmp_path, rules):
    """One file, no Python: `scorer: {kind: checklist, ...}` makes a named checklist scorer that
    `evalyard scorers` lists and `run` uses, with the file's own wording."""
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "house_checklist.jinja").write_text(
        "---\ndescription: our house rules, one question per call\nfields: [input, candidate]\nanswer: binary\n"
        "variables: {question: \"\", history: \"\"}\n"
        "scorer: {kind: checklist, name: house_rules, options: {mode: item}}\n---\n"
        "HOUSE RULES REVIEW. Instruction: {{ input }}\nResponse: {{ candidate }}\nQuestion: {{ question }}\n")
    listed = {s["name"]: s for s in json.loads(invoke(app, "scorers", "--json", "--prompts-dir", str(prompts)).stdout)}
    assert listed["house_rules"]["qualified"] == "prompts/house_rules"
    model = rules([{"contains": "HOUSE RULES REVIEW", "regex": "point [1-4]\\?", "content": '{"answer": "YES"}'},
                   {"contains": "HOUSE RULES REVIEW", "content": '{"answer": "NO"}'}])
    suite = write_suite(tmp_path / "eight.yaml", eight_item_cases())
    result = invoke(app, "run", suite, "-s", "house_rules", "--prompts-dir", str(prompts), "--judge-model", model,
                    "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["scorers"]["house_rules"]["mean"] == pytest.approx(0.5)  # the file's wording reached the judge
    assert data["usage"]["calls"] == 16  # item mode, from the file's options
    unknown = prompts / "odd.jinja"
    unknown.write_text("---\nfields: [candidate]\nanswer: binary\nscorer: {kind: rubric}\n---\n{{ candidate }}\n")
    refused = invoke(app, "scorers", "--prompts-dir", str(prompts))
    assert refused.exit_code == 2 and "kind 'rubric', which no installed plugin provides" in refused.output


def test_a_checklist_pipeline_is_not_a_candidate_generator(app, tmp_path):
    suite = write_suite(tmp_path / "s.yaml", eight_item_cases())
    refused = invoke(app, "run", suite, "-s", "checklist", "--generator", "tick")
    assert refused.exit_code == 2 and "makes a checklist, not candidates" in refused.output


def test_spellings_of_yes_add_up_by_default_and_the_last_wins_only_for_parity(app, tmp_path, rules):
    """A model that answers "Yes" (0.9) and lists " YES" (0.01) further down is confident: P(yes)
    counts both. AutoChecklist keeps the last spelling listed (0.01); `missing=no` reproduces it."""
    import math

    top = {"Yes": math.log(0.9), "No": math.log(0.05), " YES": math.log(0.01)}
    model = rules([{"content": "Yes", "logprobs": [top]}])
    cases = [{"id": "one", "input": "Say hi.", "candidate": "Hi!", "metadata": {"checklist": ["Does it greet?"]}}]
    suite = write_suite(tmp_path / "one.yaml", cases)
    ours = json.loads(invoke(app, "run", suite, "-s", "checklist:mode=item,use_logprobs=true", "--judge-model", model,
                             "--json").stdout)
    original = json.loads(invoke(app, "run", suite, "-s", "checklist:mode=item,use_logprobs=true,missing=no",
                                 "--judge-model", model, "--json").stdout)
    [ours_item] = next(app.open_store().results(ours["run_id"])).details["items"]
    [original_item] = next(app.open_store().results(original["run_id"])).details["items"]
    assert ours_item["answer"] == "yes" and ours_item["confidence"] == pytest.approx(0.91 / 0.96)
    assert original_item["answer"] == "no" and original_item["confidence"] == pytest.approx(0.01 / 0.06)


def test_the_logprob_path_asks_for_autochecklists_top_5_alternatives(app, tmp_path, rules):
    """AutoChecklist asks for the first token's top 5 alternatives. A reply whose 6th-ranked token is
    " yes" shows the difference in its reading (the last spelling listed wins): cut to 5 it is
    P(yes) = 0.55 / (0.55 + 0.05); with more alternatives " yes" (0.0015) would replace "Yes"."""
    import math

    top = {"Yes": 0.55, "No": 0.05, "The": 0.02, "I": 0.01, "**": 0.005, " yes": 0.0015}
    model = rules([{"content": "Yes", "logprobs": [{token: math.log(p) for token, p in top.items()}]}])
    cases = [{"id": "one", "input": "Say hi.", "candidate": "Hi!", "metadata": {"checklist": ["Does it greet?"]}}]
    suite = write_suite(tmp_path / "one.yaml", cases)
    run = json.loads(invoke(app, "run", suite, "-s", "checklist:mode=item,use_logprobs=true,missing=no",
                            "--judge-model", model, "--json").stdout)
    [item] = next(app.open_store().results(run["run_id"])).details["items"]
    assert item["answer"] == "yes" and item["confidence"] == pytest.approx(0.55 / 0.60)
    import sqlalchemy

    with app.open_store().engine.connect() as connection:
        sent = [row[0] for row in connection.execute(sqlalchemy.text("SELECT request FROM model_calls"))]
    assert len(sent) == 1 and '"top_logprobs": 5' in sent[0]


def test_the_scoring_templates_ship_with_the_scorer(rules):
    """A runtime made without the plugin's registered templates still finds them: the judge service
    reads the file shipped next to the scorer."""
    from evalyard import Runtime
    from evalyard_checklist.scorer import ChecklistScorer

    scorer = ChecklistScorer(mode="item")
    scorer.setup(Runtime(judge_model=rules([{"content": '{"answer": "YES"}'}])))
    assert scorer.judge.template.name == "checklist/score_item"
    assert scorer.judge.template.path.endswith("evalyard_checklist/templates/score_item.jinja")
