"""Ragas' statement metrics (``ragas/faithfulness``, ``ragas/context_recall``,
``ragas/factual_correctness``, ``ragas/noise_sensitivity``): values and details from scripted judge
answers, errors where ragas gives NaN or raises, the steps two metrics share asked once, a cached
rerun with no call, and a case without passages refused before any call. Value-for-value parity
with ragas 0.4.3 itself is in test_ragas_statements_parity.py."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from evalyard import Case, ConfigError
from evalyard.cli import cli
from evalyard_judge.rag.statements import (ContextRecall, FactualCorrectness, Faithfulness, NoiseSensitivity,
                                           fbeta, round2)

STATEMENTS = "judge/ragas_statements"
VERDICTS = "judge/ragas_statements_verdicts"
CLAIMS = "judge/ragas_factual_claims"


def checked(*pairs):
    return {"statements": [{"statement": s, "reason": "scripted", "verdict": v} for s, v in pairs]}


CASE = Case(id="c1", input="Who built the bridge?", candidate="Anna built it in 1990. It is red.",
            reference="Anna built the bridge in 1990.",
            context=["The bridge was built by Anna.", "It was finished in 1990."])


def test_faithfulness_is_the_share_of_supported_statements(rules, score):
    model = rules([{"template": STATEMENTS, "content": {"statements": ["Anna built it.", "It was 1990.", "It is red."]}},
                   {"template": VERDICTS, "contains": "It is red.",
                    "content": checked(("Anna built it.", 1), ("It was 1990.", 1), ("It is red.", 0))}])
    [result] = score(Faithfulness(model=model), CASE)
    assert result.error is None and result.value == pytest.approx(2 / 3)
    assert result.details["statements"] == ["Anna built it.", "It was 1990.", "It is red."]
    assert [v["verdict"] for v in result.details["verdicts"]] == [1, 1, 0]
    assert result.usage["calls"] == 2


def test_no_statements_is_an_error_and_an_empty_answer_costs_no_call(rules, score):
    model = rules([{"template": STATEMENTS, "content": {"statements": []}}])
    [none, empty] = score(Faithfulness(model=model), CASE, Case(id="c2", input="q", candidate="  ", context=["p"]))
    assert none.value is None and "no statements" in none.error and none.usage["calls"] == 1
    assert empty.value is None and "empty" in empty.error and not empty.usage


def test_an_unreadable_verdict_is_a_recorded_error(rules, score):
    model = rules([{"template": STATEMENTS, "content": {"statements": ["Anna built it."]}},
                   {"template": VERDICTS, "content": {"statements": [{"statement": "Anna built it.", "reason": "r",
                                                                      "verdict": "yes"}]}}])
    [result] = score(Faithfulness(model=model), CASE)
    assert result.value is None and "ragas_statements_verdicts" in result.error
    assert result.details["statements"] == ["Anna built it."]


def test_context_recall_counts_attributed_sentences(rules, score):
    model = rules([{"template": "judge/ragas_context_recall", "content": {"classifications": [
        {"statement": "Anna built the bridge.", "reason": "r", "attributed": 1},
        {"statement": "in 1990", "reason": "r", "attributed": 0}]}}])
    [result, empty] = score(ContextRecall(model=model), CASE,
                            Case(id="c2", input="q", reference="", context=["p"]))
    assert result.value == 0.5 and [c["attributed"] for c in result.details["classifications"]] == [1, 0]
    assert empty.value is None and "reference is empty" in empty.error and not empty.usage


@pytest.mark.parametrize("mode,beta,value,calls", [("f1", 1.0, 0.67, 4), ("precision", 1.0, 0.5, 2),
                                                  ("recall", 1.0, 1.0, 4), ("f1", 2.0, 0.83, 4)])
def test_factual_correctness_modes(rules, score, mode, beta, value, calls):
    model = rules([{"template": CLAIMS, "contains": "It is red", "content": {"claims": ["A built it.", "The bridge is red."]}},
                   {"template": CLAIMS, "content": {"claims": ["A built it in 1990."]}},
                   {"template": VERDICTS, "contains": "The bridge is red.",
                    "content": checked(("A built it.", 1), ("The bridge is red.", 0))},
                   {"template": VERDICTS, "content": checked(("A built it in 1990.", 1))}])
    [result] = score(FactualCorrectness(model=model, mode=mode, beta=beta), CASE)
    assert result.error is None and result.value == value, result
    assert (result.details["tp"], result.details["fp"], result.details["fn"]) == (1, 1, 0)
    assert result.usage["calls"] == calls


def test_factual_correctness_rounds_as_numpy_and_fbeta_is_ragas():
    assert round2(0.015) == 0.02 and round(0.015, 2) == 0.01  # numpy's rounding, which ragas applies
    assert round2(1 / (1 + 1e-8)) == 1.0
    assert fbeta(0, 0, 0, 1.0) == 0.0 and fbeta(1, 1, 0, 1.0) == pytest.approx(2 / 3)


def test_noise_sensitivity_counts_wrong_statements_by_passage_relevance(rules, score):
    # passage 1 supports the reference (relevant), passage 2 does not (irrelevant); of the answer's
    # three statements, S1 is right, S2 is wrong and backed by the relevant passage, S3 is wrong and
    # backed only by the irrelevant one
    case = Case(id="n", input="Q?", candidate="ANSWER", reference="REFERENCE", context=["PASSAGE-1", "PASSAGE-2"])
    model = rules([
        {"template": STATEMENTS, "contains": "REFERENCE", "content": {"statements": ["R1"]}},
        {"template": STATEMENTS, "content": {"statements": ["S1", "S2", "S3"]}},
        {"template": VERDICTS, "contains": ["PASSAGE-1", "R1"], "content": checked(("R1", 1))},
        {"template": VERDICTS, "contains": ["PASSAGE-2", "R1"], "content": checked(("R1", 0))},
        {"template": VERDICTS, "contains": "PASSAGE-1", "content": checked(("S1", 1), ("S2", 1), ("S3", 0))},
        {"template": VERDICTS, "contains": "PASSAGE-2", "content": checked(("S1", 0), ("S2", 0), ("S3", 1))},
        {"template": VERDICTS, "contains": "REFERENCE", "content": checked(("S1", 1), ("S2", 0), ("S3", 0))}])
    [relevant] = score(NoiseSensitivity(model=model), case)
    [irrelevant] = score(NoiseSensitivity(model=model, mode="irrelevant"), case)
    assert relevant.value == pytest.approx(1 / 3) and relevant.details["counted_statements"] == [1]
    assert irrelevant.value == pytest.approx(1 / 3) and irrelevant.details["counted_statements"] == [2]
    assert [p["relevant"] for p in relevant.details["passages"]] == [True, False]
    assert relevant.usage["calls"] == 2 + 2 * 2 + 1


def test_noise_sensitivity_refuses_an_empty_reference_without_a_call(rules, score):
    model = rules([{"template": STATEMENTS, "content": {"statements": ["x"]}}])
    [result] = score(NoiseSensitivity(model=model), Case(id="e", input="q", candidate="a", reference="", context=["p"]))
    assert result.value is None and "reference is empty" in result.error and not result.usage


def test_options_are_checked():
    with pytest.raises(ConfigError):
        Faithfulness(samples=2)
    with pytest.raises(ConfigError):
        FactualCorrectness(beta=0)
    with pytest.raises(ConfigError):
        NoiseSensitivity(mode="both")


# -- through the CLI: shared steps, the cache, refusal ------------------------------------------

SHARED_RULES = [
    {"contains": ["Anna built it.", "The bridge was built by Anna."],
     "content": checked(("Anna built it.", 1), ("It is red.", 0))},
    {"contains": ["Anna built it.", "Anna built the bridge in 1990."],
     "content": checked(("Anna built it.", 1), ("It is red.", 0))},
    {"contains": ["Anna built the bridge (ref).", "The bridge was built by Anna."],
     "content": checked(("Anna built the bridge (ref).", 1))},
    {"contains": ["Anna built it in 1990. It is red.", "Who built"], "content": {"statements": ["Anna built it.",
                                                                                                "It is red."]}},
    {"contains": ["Anna built the bridge in 1990.", "Who built"],
     "content": {"statements": ["Anna built the bridge (ref)."]}},
]


def run_suite(app, tmp_path, server, scorers, case, db):
    data = tmp_path / "cases.jsonl"
    data.write_text(json.dumps(case) + "\n")
    suite = {"name": "statements", "data": str(data), "scorers": [{"name": s} for s in scorers],
             "models": {"openai/fake-judge": {"api_base": server.base_url, "supports_schema": True}}}
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    before = server.stats.requests
    done = CliRunner().invoke(cli, ["run", str(path), "--judge-model", "openai/fake-judge", "--db", str(db), "--json"],
                              obj=app, catch_exceptions=False)
    return done, server.stats.requests - before


ONE_PASSAGE = {"id": "b", "input": "Who built the bridge?", "candidate": "Anna built it in 1990. It is red.",
               "reference": "Anna built the bridge in 1990.", "context": ["The bridge was built by Anna."]}


def test_faithfulness_and_noise_sensitivity_share_steps_and_a_rerun_is_cached(app, tmp_path):
    from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig

    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump(SHARED_RULES))
    with FakeOpenAIServer(FakeServerConfig(rules=str(rules_file))) as server:
        faithfulness = run_suite(app, tmp_path, server, ["ragas/faithfulness"], ONE_PASSAGE, tmp_path / "f.db")
        noise = run_suite(app, tmp_path, server, ["ragas/noise_sensitivity"], ONE_PASSAGE, tmp_path / "n.db")
        both = run_suite(app, tmp_path, server, ["ragas/faithfulness", "ragas/noise_sensitivity"], ONE_PASSAGE,
                         tmp_path / "both.db")
        again = run_suite(app, tmp_path, server, ["ragas/faithfulness", "ragas/noise_sensitivity"], ONE_PASSAGE,
                          tmp_path / "both.db")
    for done, _ in (faithfulness, noise, both, again):
        assert done.exit_code == 0, done.output
    # faithfulness: statements + one check; noise: two splits, two checks per passage, one against
    # the reference -- the answer's split and its check against the one passage are faithfulness's
    assert (faithfulness[1], noise[1]) == (2, 5)
    assert both[1] == 5 and again[1] == 0


def test_a_case_without_passages_is_refused_before_any_call(app, tmp_path):
    from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig

    case = {**ONE_PASSAGE, "context": []}
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump(SHARED_RULES))
    with FakeOpenAIServer(FakeServerConfig(rules=str(rules_file))) as server:
        for scorer in ("ragas/faithfulness", "ragas/context_recall", "ragas/noise_sensitivity"):
            done, calls = run_suite(app, tmp_path, server, [scorer], case, tmp_path / "r.db")
            assert done.exit_code == 2 and calls == 0
            assert "case 'b' has no context" in done.output, done.output


def test_context_recall_plans_its_one_request_as_it_asks_it(app, tmp_path):
    from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig

    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump([{"contains": "Anna built the bridge in 1990.", "content": {
        "classifications": [{"statement": "Anna built the bridge in 1990.", "reason": "r", "attributed": 1}]}}]))
    with FakeOpenAIServer(FakeServerConfig(rules=str(rules_file))) as server:
        done, calls = run_suite(app, tmp_path, server, ["ragas/context_recall"], ONE_PASSAGE, tmp_path / "p.db")
        assert done.exit_code == 0 and calls == 1, done.output
        path = tmp_path / "suite.yaml"
        plan = CliRunner().invoke(cli, ["run", str(path), "--judge-model", "openai/fake-judge", "--db",
                                        str(tmp_path / "p.db"), "--plan", "--json"], obj=app, catch_exceptions=False)
    [model] = json.loads(plan.stdout)["plan"]["lines"][0]["models"]
    assert (model["calls"], model["cache_hits"]) == (1, 1)
