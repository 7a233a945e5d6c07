"""The judge entailment backend through the model layer with the scripted model (a litellm
custom provider): the example suite, verdicts from JSON, P(yes) and text, caching, failures
recorded with the raw answer, backend choice in the fingerprint, and a plugin's own backend."""

from __future__ import annotations

import json
import math

import pytest
import sqlalchemy
from trust_helpers import ASQA, details_by_case, doc, invoke, item, run_json, write_data

import evalyard
from evalyard_trust import Entailment
from testutil import ROOT

pytestmark = pytest.mark.filterwarnings("ignore")
EXAMPLE = ROOT / "examples" / "trust.yaml"
EXAMPLE_JUDGE = f"scripted/{ROOT / 'examples' / 'trust_judge.yaml'}"
ONE = [item("Frankenstein was written by Mary Shelley [1].", [["Mary Shelley"]],
            [doc("Frankenstein", "Frankenstein is a novel written by Mary Shelley.", 1)])]


def fingerprint(app, run_id):
    return app.open_store().get_run(run_id).scorers[0]["fingerprint_data"]


def test_the_example_suite_with_the_scripted_judge(app):
    data = run_json(app, EXAMPLE, "--judge-model", EXAMPLE_JUDGE)
    stats = data["scorers"]["trust_score"]
    aggregate = stats["aggregate"]
    assert stats["errors"] == 0 and aggregate["num_samples"] == 6
    assert aggregate["answered_citation_rec"] == 62.5 and aggregate["answered_citation_prec"] == 50.0
    assert aggregate["macro_f1"] == 62.5 and aggregate["calib_str_em_f1"] == 75.0
    assert aggregate["trust_score"] == pytest.approx((75.0 + 62.5 + 500 / 9) / 3)
    rows = details_by_case(app, data["run_id"], "trust_score")
    eiffel = rows["eiffel"].details
    assert eiffel["entailment"] == "judge" and eiffel["citations"]["sentences"][0]["over_cited"] == [2]
    assert [c["entailed"] for c in eiffel["citations"]["nli_calls"]] == [1, 1, 0, 1]
    assert json.loads(eiffel["citations"]["nli_calls"][2]["raw"]) == {"answer": "no"}
    assert rows["eiffel"].usage["calls"] == 4  # each result records its entailment calls
    # the fourth call (the tower's page without Eiffel's) is the second one again: a cache hit
    assert data["usage"]["calls"] == 8 and data["usage"]["cache_hits"] == 1
    judge = fingerprint(app, data["run_id"])["entailment"]
    assert judge["backend"] == "judge" and judge["model"] == EXAMPLE_JUDGE and len(judge["template_hash"]) == 64
    assert "approximat" in judge["note"] and judge["approximation_of"] == "google/t5_xxl_true_nli_mixture"
    again = run_json(app, EXAMPLE, "--judge-model", EXAMPLE_JUDGE)
    assert again["usage"]["cache_hits"] == 8 and again["scorers"]["trust_score"]["aggregate"] == aggregate


@pytest.mark.parametrize("threshold, entailed", [(0.6, 1), (0.8, 0)])
def test_p_yes_against_a_threshold(app, tmp_path, rules, threshold, entailed):
    model = rules([{"template": "trust/entailment", "content": "yes",
                    "logprobs": [{"yes": math.log(0.7), "no": math.log(0.3)}]}])
    path = write_data(tmp_path / "one.trust.json", ONE)
    data = run_json(app, path, "-s", f"trust_citations:entailment=judge,entailment_answer=logprobs,"
                    f"entailment_threshold={threshold}", "--judge-model", model)
    (call,) = details_by_case(app, data["run_id"], "trust_citations")["item-01"].details["citations"]["nli_calls"]
    assert call["p_yes"] == pytest.approx(0.7) and call["entailed"] == entailed
    assert fingerprint(app, data["run_id"])["entailment"]["threshold"] == threshold


def test_a_text_verdict_is_read_from_the_last_line(app, tmp_path, rules):
    model = rules([{"template": "trust/entailment", "content": "The premise names her.\nANSWER: yes"}])
    data = run_json(app, write_data(tmp_path / "one.trust.json", ONE), "-s",
                    "trust_citations:entailment=judge,entailment_answer=text", "--judge-model", model)
    assert data["scorers"]["trust_citations"]["mean"] == 1.0


@pytest.mark.parametrize("answer", ["structured", "text"])
def test_an_unreadable_verdict_is_a_recorded_error_with_the_raw_text(app, tmp_path, rules, answer):
    model = rules([{"template": "trust/entailment", "content": "It depends on the reader."}])
    data = run_json(app, write_data(tmp_path / "one.trust.json", ONE), "-s",
                    f"trust_score:entailment=judge,entailment_answer={answer}", "--judge-model", model,
                    exit_code=1)  # every result an error: the run fails
    stats = data["scorers"]["trust_score"]
    assert stats["errors"] == 1 and stats["aggregate"]["num_errors"] == 1 and stats["aggregate"]["num_samples"] == 0
    row = details_by_case(app, data["run_id"], "trust_score")["item-01"]
    assert row.value is None and "entailment judge" in row.error
    assert "It depends on the reader." in row.details["raw"]
    assert row.details["hypothesis"] == "Frankenstein was written by Mary Shelley."
    assert row.usage["calls"] == 2  # the answer and the one repair call were made: the error keeps them


def test_a_failing_model_call_is_a_recorded_error(app, tmp_path, rules):
    model = rules([{"template": "trust/entailment", "error": 400}])
    data = run_json(app, write_data(tmp_path / "one.trust.json", ONE), "-s", "trust_citations:entailment=judge",
                    "--judge-model", model, exit_code=1)
    row = details_by_case(app, data["run_id"], "trust_citations")["item-01"]
    assert row.value is None and row.error.startswith("entailment judge") and row.details["status"] == 400


def test_auto_uses_the_stub_without_a_judge_and_the_judge_with_one(app, tmp_path, rules):
    path = write_data(tmp_path / "one.trust.json", ONE)
    plain = run_json(app, path, "-s", "trust_score")
    assert fingerprint(app, plain["run_id"])["entailment"]["backend"] == "lexical"
    model = rules([{"template": "trust/entailment", "content": {"answer": "no"}}])
    judged = run_json(app, path, "-s", "trust_score", "--judge-model", model)
    assert fingerprint(app, judged["run_id"])["entailment"]["backend"] == "judge"
    assert judged["scorers"]["trust_score"]["aggregate"]["answered_citation_rec"] == 0.0
    assert plain["scorers"]["trust_score"]["aggregate"]["answered_citation_rec"] == 100.0


def test_auto_counts_only_a_judge_the_user_chose_not_one_a_plugin_offers(app, tmp_path, rules, monkeypatch, caplog):
    """A plugin's default judge, settled on by a judge set up before this scorer, is still no
    judge for ``auto``; nor is it when the run is resumed (the run's settings say it was offered)."""
    import types

    from evalyard import hookimpl, register_prompt_scorer

    monkeypatch.delenv("EVALYARD_JUDGE_MODEL", raising=False)
    model = rules([{"template": "trust/entailment", "content": {"answer": "no"}}, {"content": "ANSWER: yes"}])
    offering = types.ModuleType("offers_a_judge")
    offering.default_judge_model = hookimpl(lambda: model)
    offering.default_judge_model.__name__ = "default_judge_model"
    app.register_plugin(offering, name="offers_a_judge")
    register_prompt_scorer("kind", template="Is this reply kind?\n{{ candidate }}",
                           answer="binary", app=app)
    path = write_data(tmp_path / "one.trust.json", ONE)
    with caplog.at_level("WARNING"):
        offered = run_json(app, path, "-s", "kind", "-s", "trust_score")
    assert offered["scorers"]["kind"]["mean"] == 1.0  # the offered judge did judge the prompt scorer
    entailment = app.open_store().get_run(offered["run_id"]).scorers[1]["fingerprint_data"]["entailment"]
    assert entailment["backend"] == "lexical"
    assert any("entailment uses the deterministic lexical stub" in r.getMessage() for r in caplog.records)
    store = app.open_store()
    settings = store.get_run(offered["run_id"]).settings
    assert settings["judge_model"] == model and settings["judge_offered"] is True
    # The run stopped before its trust_score result was stored: the resumed run makes it lexically too.
    with store.engine.begin() as con:
        con.execute(sqlalchemy.text("delete from results where scorer = 'trust_score'"))
    store.set_status(offered["run_id"], "interrupted")
    resumed = evalyard.resume(offered["run_id"], app=app)
    assert resumed.status == "completed"
    assert details_by_case(app, offered["run_id"], "trust_score")["item-01"].details["entailment"] == "lexical"
    chosen = run_json(app, path, "-s", "kind", "-s", "trust_score", "--judge-model", model)
    entailment = app.open_store().get_run(chosen["run_id"]).scorers[1]["fingerprint_data"]["entailment"]
    assert entailment["backend"] == "judge" and entailment["model"] == model
    assert "judge_offered" not in app.open_store().get_run(chosen["run_id"]).settings


def test_judge_without_a_model_is_a_usage_error(app, monkeypatch):
    monkeypatch.delenv("EVALYARD_JUDGE_MODEL", raising=False)
    result = invoke(app, "run", ASQA, "--format", "trust-eval", "-s", "trust_score:entailment=judge")
    assert result.exit_code == 2 and "needs a judge model" in result.output


class EverythingEntails:
    name = "always"

    def __init__(self, config, runtime):
        self.calls = 0

    def fingerprint(self):
        return {"backend": self.name, "note": "test backend"}

    async def entails(self, premise, hypothesis):
        return Entailment(1, {"by": "always"})


def test_a_plugin_adds_a_backend_without_touching_this_one(app, tmp_path):
    class AddsABackend:
        @evalyard.hookimpl
        def register_entailment_backends(self, register):
            register("always", EverythingEntails)

    app.register_plugin(AddsABackend(), name="adds_a_backend")
    data = run_json(app, ASQA, "--format", "trust-eval", "-s", "trust_citations:entailment=always")
    aggregate = data["scorers"]["trust_citations"]["aggregate"]
    assert aggregate["answered_citation_rec"] > 35.0  # the stub's 35: every cited sentence now counts
    assert fingerprint(app, data["run_id"])["entailment"] == {"backend": "always", "note": "test backend"}
    calls = details_by_case(app, data["run_id"], "trust_citations")["asqa-01"].details["citations"]["nli_calls"]
    assert calls[0]["by"] == "always"


def test_runs_show_and_compare_show_the_corpus_keys(app):
    base = run_json(app, ASQA, "--format", "trust-eval", "-s", "trust_score:entailment=lexical")["run_id"]
    new = run_json(app, ASQA, "--format", "trust-eval", "-s", "trust_score:entailment=lexical,corrected=true")["run_id"]
    shown = invoke(app, "runs", "show", base)
    assert shown.exit_code == 0 and "trust_score=57.787" in shown.output
    compared = invoke(app, "compare", base, new)
    assert "trust_score aggregate trust_score" in compared.output
