"""The twelve aspects of seed 004: registered as criteria/<aspect>, polarity stated and applied,
the hallucination aspect on one explicit scale (share fabricated, lower is better)."""

from __future__ import annotations

import pytest

import evalyard
from evalyard import Case

ASPECTS = ["hallucination", "correctness", "conciseness", "relevance", "coherence", "harmfulness", "maliciousness",
           "helpfulness", "controversiality", "depth", "creativity", "detail"]
NO_IS_GOOD = {"harmfulness", "maliciousness", "controversiality"}


def test_all_twelve_are_registered_with_polarity_and_fields(app):
    scorers = app.registry.scorers
    for aspect in ASPECTS:
        entry = scorers.entry(f"criteria/{aspect}")
        cls = entry.obj
        assert cls.higher_is_better is (aspect not in NO_IS_GOOD | {"hallucination"}), aspect
        assert cls.description.endswith("higher is better)" if cls.higher_is_better else "lower is better)")
    fields = {a: tuple(scorers.get(f"criteria/{a}").requires) for a in ASPECTS}
    assert fields["correctness"] == ("input", "reference", "candidate")
    assert fields["relevance"] == fields["hallucination"] == ("candidate", "context")
    assert fields["conciseness"] == ("candidate",)


CASE = Case(id="c", input="Explain photosynthesis briefly.", reference="Plants turn light, water and CO2 into sugar.",
            candidate="Plants use sunlight to make sugar from water and carbon dioxide.",
            context=["Photosynthesis: plants convert light, water and carbon dioxide into glucose and oxygen."])


def test_yes_is_bad_for_harmfulness_and_good_for_helpfulness(app, rules):
    model = rules([{"content": "It is.\nANSWER: yes"}])
    run = evalyard.evaluate([CASE], ["criteria/harmfulness", "criteria/helpfulness"], app=app, judge_model=model)
    [harm] = [r for r in run.results if r["scorer"].endswith("harmfulness")]
    [helps] = [r for r in run.results if r["scorer"].endswith("helpfulness")]
    assert (harm["value"], harm["label"], harm["passed"]) == (1.0, "yes", False)
    assert (helps["value"], helps["label"], helps["passed"]) == (1.0, "yes", True)
    assert harm["details"]["good_outcome"] == "no" and helps["details"]["good_outcome"] == "yes"


def test_each_aspect_asks_its_own_question(app, rules):
    model = rules([{"contains": "depth of thought", "content": "ANSWER: no"}, {"content": "ANSWER: yes"}])
    run = evalyard.evaluate([CASE], ["criteria/depth", "criteria/detail"], app=app, judge_model=model)
    values = {r["scorer"]: r["value"] for r in run.results}
    assert sorted(values.values()) == [0.0, 1.0]
    fingerprints = {s["name"]: s["fingerprint_data"] for s in app.open_store().get_run(run.run_id).scorers}
    assert {f["question"] for f in fingerprints.values()} == {
        "Does the submission demonstrate depth of thought?", "Does the submission demonstrate attention to detail?"}


@pytest.mark.parametrize("answer,value,passed", [("0", 0.0, True), ("25", 0.25, False), ("100", 1.0, False)])
def test_hallucination_is_the_share_fabricated(app, rules, answer, value, passed):
    model = rules([{"template": "judge/criterion_hallucination", "content": f"Mostly grounded.\nANSWER: {answer}"}])
    run = evalyard.evaluate([CASE], ["criteria/hallucination"], app=app, judge_model=model)
    [result] = run.results
    assert (result["value"], result["passed"]) == (value, passed)
    assert result["details"]["raw_score"] == float(answer) and result["details"]["range"] == [0.0, 100.0]


def test_a_user_can_reword_an_aspect_through_its_variables(rules, score):
    from evalyard_judge.criteria import SCORERS

    conciseness = next(s for s in SCORERS if s.name == "conciseness")
    model = rules([{"contains": "Is it under ten words?", "content": "ANSWER: no"}, {"content": "ANSWER: yes"}])
    [result] = score(conciseness(model=model, variables={"question": "Is it under ten words?"}), CASE)
    assert result.value == 0.0


def test_logprob_confidence_on_a_binary_aspect(rules, score):
    from evalyard_judge.criteria import SCORERS

    coherence = next(s for s in SCORERS if s.name == "coherence")
    model = rules([{"content": "yes", "logprobs": {"yes": -0.2231, "no": -1.6094}}])
    [result] = score(coherence(model=model, logprobs=True), CASE)
    assert result.value == pytest.approx(0.8, abs=1e-3) and result.label == "yes"


def test_the_readme_names_every_scorer_and_template(app):
    from testutil import ROOT

    readme = (ROOT / "plugins" / "judge" / "README.md").read_text()
    for entry in app.registry.scorers:
        if entry.namespace in ("judge", "criteria"):
            assert entry.name in readme, entry.qualified
    for path in (ROOT / "plugins" / "judge" / "evalyard_judge" / "templates").glob("*.jinja"):
        assert f"`judge/{path.stem}`" in readme, path.stem


def test_one_entry_point_registers_the_aspects_under_the_criteria_namespace():
    """The distribution declares one plugin, ``judge``; ``criteria`` is a namespace of it."""
    from importlib.metadata import distribution

    assert [(ep.group, ep.name) for ep in distribution("evalyard-judge").entry_points] == [("evalyard", "judge")]


def judge_namespaces(**settings):
    import dataclasses

    from evalyard import Application, Settings

    app = Application(dataclasses.replace(Settings.from_env(), **settings))
    loaded = {e.namespace for e in app.registry.scorers if e.plugin == "judge"}
    return loaded, ({i.name for i in app.host.infos()} & {"judge", "criteria"})


@pytest.mark.parametrize("allowed, blocked, namespaces", [
    ({"judge", "criteria"}, (), {"judge", "criteria"}),   # what the tests and users set before: unchanged
    ({"judge"}, (), {"judge"}),                           # unchanged: the aspects come when named
    ({"criteria"}, (), set()),                            # a namespace comes with its plugin: nothing, no error
    (None, ("criteria",), {"judge", "ragas"}),            # blocking the namespace drops the aspects only
    (None, ("judge",), set()),                            # blocking the plugin drops both
])
def test_allow_and_block_lists_name_the_criteria_namespace(allowed, blocked, namespaces):
    loaded, plugins = judge_namespaces(load_plugins=None if allowed is None else frozenset(allowed),
                                       block_plugins=frozenset(blocked))
    assert loaded == namespaces
    assert plugins == ({"judge"} if namespaces else set())  # never a plugin named criteria
