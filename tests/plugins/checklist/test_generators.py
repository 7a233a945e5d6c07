"""Every pipeline generates checklists for the example suite and they are scored, through the CLI,
the scripted model (litellm custom provider), the model layer's cache and the real store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from evalyard.cli import cli
from testutil import provider_plugin

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SUITE = str(EXAMPLES / "checklist.yaml")
MODEL = f"scripted/{EXAMPLES / 'checklist_scripted.yaml'}"
CORPUS_CONFIG = {
    "checkeval": {"dimensions": [{"name": "coherence", "definition": "the text hangs together",
                                  "sub_dimensions": ["order", "links"]}], "filter": True, "dedup": "text"},
    "interacteval": {"dimension": "quality", "rubric": "1 poor to 5 excellent"},
    "feedback": {"dedup": "text", "domain": "short writing tasks"},
}
PIPELINES = ["tick", "rocketeval", "rlcf_direct", "rlcf_candidate", "rlcf_candidates_only", "openrubrics_pairwise",
             "openrubrics_listwise", "feedback", "checkeval", "interacteval"]


def invoke(app, *args):
    return CliRunner().invoke(cli, list(args), obj=app, catch_exceptions=False)


def generate(app, tmp_path, pipeline, *extra):
    output = tmp_path / f"{pipeline}.jsonl"
    args = ["checklist", "generate", SUITE, "--pipeline", pipeline, "--model", MODEL, "-o", str(output), *extra]
    if pipeline in CORPUS_CONFIG:
        config = tmp_path / f"{pipeline}.yaml"
        config.write_text(yaml.safe_dump(CORPUS_CONFIG[pipeline]))
        args += ["--config", str(config)]
    result = invoke(app, *args)
    records = [json.loads(line) for line in output.read_text().splitlines()] if output.exists() else []
    return result, records, output


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_every_pipeline_generates_and_its_checklists_are_scored(app, tmp_path, pipeline):
    result, records, output = generate(app, tmp_path, pipeline)
    assert result.exit_code == 0, result.output
    assert all("checklist" in r and r["checklist"]["items"] for r in records), records
    corpus = pipeline in CORPUS_CONFIG
    assert len(records) == (1 if corpus else 3)
    assert all(("case_id" in r) != corpus for r in records)
    suggested = next(line for line in result.output.splitlines() if line.startswith("score with:"))
    scorer = suggested.split('-s "', 1)[1].split('"', 1)[0]
    run = invoke(app, "run", SUITE, "-s", scorer, "--judge-model", MODEL, "--json")
    assert run.exit_code == 0, run.output
    data = json.loads(run.stdout)
    summary = data["scorers"]["checklist"]
    assert summary["errors"] == 0 and summary["scored"] == 3
    assert 0 < summary["aggregate"]["micro_pass_rate"] < 1
    store = app.open_store()
    details = [r.details for r in store.results(data["run_id"])]
    assert all(d["checklist"]["source_method"] == pipeline for d in details)
    checklist = records[0]["checklist"]
    if pipeline.startswith("rlcf"):
        assert [i["weight"] for i in checklist["items"]] == [100.0, 75.0, 25.0]
        assert details[0]["primary_metric"] == "weighted" and details[0]["num_calls"] == 3
    elif pipeline == "rocketeval":
        assert details[0]["scoring_method"] == "normalized" and details[0]["logprobs_used"] is True
        assert [i["confidence_level"] for i in details[0]["items"]] == ["yes_90", "yes_90", "no_30"]  # 0.2 is no_30: strict <
    elif pipeline.startswith("openrubrics"):
        assert [i["category"] for i in checklist["items"]] == ["hard_rule", "principle", "principle"]
        assert set(details[0]["categories"]) == {"hard_rule", "principle"}
    elif pipeline == "checkeval":
        assert {i["category"] for i in checklist["items"]} == {"coherence"}
    elif pipeline == "feedback":
        assert records[0]["details"]["observations"] == 7
        assert all(i["metadata"]["sources"] for i in checklist["items"])
    else:
        assert all(i["weight"] == 100.0 and i["category"] in (None, "quality") for i in checklist["items"])


def test_candidates_are_generated_when_missing_and_a_second_generation_is_answered_from_the_cache(app, tmp_path):
    suite = tmp_path / "questions.jsonl"
    suite.write_text("".join(json.dumps({"id": n, "input": q, "reference": "A short answer."}) + "\n"
                             for n, q in (("a", "Name a prime number."), ("b", "Name a colour."))))
    outputs = []
    for _ in range(2):
        output = tmp_path / "out.jsonl"
        result = invoke(app, "checklist", "generate", str(suite), "-p", "rlcf_candidate", "-m", MODEL, "-o",
                        str(output), "-O", "candidate_models=" + MODEL)
        assert result.exit_code == 0, result.output
        outputs.append((result.output, [json.loads(line) for line in output.read_text().splitlines()]))
    # one candidate model: 4 samples at 0.9 per case, then the checklist call
    assert "model calls 10, cache hits 0" in outputs[0][0]
    assert "model calls 10, cache hits 10" in outputs[1][0]
    records = outputs[1][1]
    assert all(r["details"]["candidates_from"] == "generated" and len(r["details"]["candidates"]) == 4
               for r in records)
    assert outputs[0][1] == [{**r, "details": {**r["details"], "cached": False}} for r in records]


def test_the_users_max_items_is_honoured_and_min_items_enforced(app, tmp_path):
    result, records, _ = generate(app, tmp_path, "tick", "-O", "max_items=2")
    assert result.exit_code == 0
    assert all(len(r["checklist"]["items"]) == 2 and r["details"]["truncated_from"] == 3 for r in records)
    result, records, _ = generate(app, tmp_path, "rlcf_direct", "-O", "min_items=5")
    assert result.exit_code == 1
    assert all("fewer than min_items=5" in r["error"] and len(r["details"]["checklist"]["items"]) == 3
               for r in records)


def test_a_generator_is_refused_as_a_candidate_generator_and_bad_options_are_one_line(app, tmp_path):
    result = invoke(app, "run", SUITE, "--generator", "tick", "-s", "checklist", "--judge-model", MODEL)
    assert result.exit_code == 2 and "makes a checklist, not candidates" in result.output
    result, _, _ = generate(app, tmp_path, "tick", "-O", "max_items=zero")
    assert result.exit_code == 2 and "max_items" in result.output and len(result.output.strip().splitlines()) == 1
    result, _, _ = generate(app, tmp_path, "nope")
    assert result.exit_code == 2 and "unknown checklist pipeline" in result.output


def test_feedback_merges_near_duplicates_with_the_embedding_plugins_bundled_model(app, tmp_path, rules):
    pytest.importorskip("evalyard_embedding")
    model = rules([
        {"template": "checklist/gen_feedback_merge", "content": {"question": "Does the email give the new date?"}},
        {"template": "checklist/gen_feedback_tag",
         "content": {"items": [{"index": 0, "general": True}, {"index": 1, "general": True}]}},
        {"template": "checklist/gen_feedback", "content": {"items": [
            {"question": "Does the email state the new meeting date?", "sources": [0]},
            {"question": "Does the email state the new date of the meeting?", "sources": [1]},
            {"question": "Is the email signed?", "sources": [2]}]}}])
    suite = tmp_path / "fb.jsonl"
    suite.write_text(json.dumps({"id": "a", "input": "x", "metadata": {
        "feedback": ["Say the new date.", "The date is missing.", "No signature."]}}) + "\n")
    output = tmp_path / "fb-out.jsonl"
    result = invoke(app, "checklist", "generate", str(suite), "-p", "feedback", "-m", model, "-o", str(output))
    assert result.exit_code == 0, result.output
    (record,) = [json.loads(line) for line in output.read_text().splitlines()]
    assert record["details"]["dedup"] == {"method": "embedding", "merged_groups": 1}
    items = record["checklist"]["items"]
    assert [i["question"] for i in items] == ["Does the email give the new date?", "Is the email signed?"]
    assert items[0]["metadata"]["sources"] == [0, 1]


class Gated:
    """A model provider that serves only ``gated/have``: its ``check`` refuses the others."""

    def __init__(self):
        self.asked = []

    def capabilities(self, model):
        return {"supports_schema": False}

    def check(self, model):
        if model != "gated/have":
            raise FileNotFoundError(f"{model}: not installed here")

    async def acompletion(self, model, messages, *args, **kwargs):
        import litellm

        self.asked.append(model)
        return litellm.ModelResponse(choices=[{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": '{"items": [{"question": "Is it short?"}, {"question": "Is it kind?"}]}'}}])


@pytest.mark.parametrize("pipeline, options", [
    ("tick", ["--model", "gated/missing"]),
    ("rlcf_candidates_only", ["--model", MODEL, "-O", "candidate_models=gated/missing"])])
def test_a_model_its_provider_refuses_is_refused_before_anything_is_asked(app, tmp_path, pipeline, options):
    gated = Gated()
    app.register_plugin(provider_plugin("gated", gated), name="gated_plugin")
    output = tmp_path / "out.jsonl"
    result = invoke(app, "checklist", "generate", SUITE, "--pipeline", pipeline, *options, "-o", str(output))
    assert result.exit_code == 2 and "gated/missing: not installed here" in result.output
    assert gated.asked == [] and not output.exists()


def test_a_generated_checklists_fingerprint_names_its_model_and_template_and_compare_sees_a_new_one(app, tmp_path, rules):
    model = rules([
        {"template": "checklist/gen_tick", "content": {"items": [{"question": "Is it polite?"},
                                                                 {"question": "Is it short?"}]}},
        {"template": "checklist/score_batch", "content": {"answers": [{"question_index": 1, "answer": "YES"},
                                                                      {"question_index": 2, "answer": "YES"}]}}])
    suite = tmp_path / "gen.jsonl"
    suite.write_text(json.dumps({"id": "mail", "input": "Say hello.", "candidate": "Hello."}) + "\n")
    prompts = tmp_path / "prompts"
    shipped = Path(__import__("evalyard_checklist").__file__).parent / "templates" / "gen_tick.jinja"
    (prompts / "checklist").mkdir(parents=True)
    (prompts / "checklist" / "gen_tick.jinja").write_text(shipped.read_text() + "\nBe brief.\n")

    def run(*extra):
        result = invoke(app, "run", str(suite), "-s", "checklist:generator=tick", "--judge-model", model, "--json",
                        *extra)
        assert result.exit_code == 0, result.output
        run_id = json.loads(result.stdout)["run_id"]
        return run_id, app.open_store().get_run(run_id).scorers[0]["fingerprint_data"]["generator"]

    base, shipped_print = run()
    # the template's name, as prompt scorers record theirs
    assert shipped_print["model"] == model and shipped_print["template"] == "checklist/gen_tick"
    assert len(shipped_print["template_hash"]) == 64
    new, own_print = run("--prompts-dir", str(prompts))
    assert own_print["template_source"].endswith("gen_tick.jinja") and own_print["model"] == model
    assert own_print["template_hash"] != shipped_print["template_hash"]
    compared = invoke(app, "compare", base, new)
    assert "WARNING: scorer 'checklist' differs between the runs" in compared.output


@pytest.mark.parametrize("pipeline, options, steps", [
    ("feedback", {}, {"checklist/gen_feedback_merge", "checklist/gen_feedback_tag"}),
    ("interacteval", {}, {"checklist/gen_interacteval_components", "checklist/gen_interacteval_validate"}),
    ("rlcf_candidate", {"candidate_models": [MODEL]}, {"checklist/gen_candidate"}),
    ("rlcf_candidate", {}, None)])
def test_the_templates_of_a_pipelines_further_steps_are_in_its_fingerprint(app, pipeline, options, steps):
    from evalyard_checklist.generators import make_generator

    generator = make_generator(pipeline, {"model": MODEL, **options})
    runtime = app.runtime({}, 1)
    generator.bind(runtime)
    data = generator.fingerprint_data()
    assert data["model"] == MODEL and len(data["template_hash"]) == 64
    if steps is None:
        assert "step_templates" not in data
    else:
        assert set(data["step_templates"]) == steps
        shipped = {name: runtime.prompts.get(name).hash for name in data["step_templates"]}
        assert data["step_templates"] == shipped
