"""Trust-Score formulas on data built for them: the seed's sample arithmetic, QAMPARI (em5),
claim match (cm), refusal detection and the corrected mode. Runs go through the CLI, the
loader and the store; entailment is the lexical stub (deterministic)."""

from __future__ import annotations

import pytest
from trust_helpers import assert_close, details_by_case, doc, item, run_json, write_data

from evalyard_trust.refusal import REFUSAL_PHRASE, FuzzyRefusal, fuzzywuzzy_partial_ratio
from evalyard_trust.text import normalize

pytestmark = pytest.mark.filterwarnings("ignore")
REFUSAL = "I apologize, but I couldn't find an answer to your question in the search results."
PARIS = doc("Paris", "Paris is the capital of France.", 1)
OTHER = doc("Lyon", "Lyon is known for its cuisine.", 0)


def seed_sample():
    """Ten questions, five answered (all answerable), seven answerable, as in trust_score.md section 9."""
    answered = [
        item("The capital of France is Paris [1].", [["Paris"]], [PARIS, OTHER]),
        item("Paris is the capital of France [1].", [["Paris"]], [PARIS, OTHER]),
        item("Paris is the capital of France [1]. It has many museums.", [["Paris"]], [PARIS, OTHER]),
        item("Paris is the capital of France [2].", [["Paris"]], [PARIS, OTHER]),  # wrong document cited
        item("Paris is the capital of France.", [["Paris"]], [PARIS, OTHER]),  # no citation
    ]
    refused_answerable = [item(REFUSAL, [["Paris"]], [PARIS, OTHER]) for _ in range(2)]
    refused_unanswerable = [item(REFUSAL, [["Lyon"]], [doc("Lyon", "Lyon is on the Rhone.", 0)]) for _ in range(3)]
    return answered + refused_answerable + refused_unanswerable


def test_the_seed_sample_arithmetic(app, tmp_path):
    data = run_json(app, write_data(tmp_path / "seed.trust.json", seed_sample()), "-s", "trust_score:entailment=lexical")
    aggregate = data["scorers"]["trust_score"]["aggregate"]
    assert_close(aggregate, {
        "answered_ratio": 50.0, "answered_num": 5, "answerable_num": 7, "overlapped_num": 5,
        "reject_rec": 100.0, "reject_prec": 60.0, "reject_f1": 75.0,
        "answerable_rec": 500 / 7, "answerable_prec": 100.0, "answerable_f1": 250 / 3,
        "macro_f1": (75 + 250 / 3) / 2, "calib_answered_str_em": 100.0, "calib_answerable_str_em": 500 / 7,
        "calib_str_em_f1": 250 / 3, "answered_citation_rec": 50.0, "answered_citation_prec": 60.0,
        "answered_citation_f1": 600 / 11, "parametric_str_em": 0.0, "parametric_str_hit": 0.0,
    })
    assert round(aggregate["macro_f1"], 2) == 79.17 and round(aggregate["answered_citation_f1"], 2) == 54.55
    assert aggregate["trust_score"] == pytest.approx((79.1667 + 83.3333 + 54.5455) / 3, abs=1e-3)
    assert round(aggregate["trust_score"], 3) == 72.348


def qampari_items():
    return [
        item("Paris [1], Lyon [1], Marseille [2].", [["Paris"], ["Lyon"], ["Nice"]],
             [doc("Cities", "Paris and Lyon are French cities.", 1, 1, 0), doc("Ports", "Marseille is a port.", 0, 0, 0)],
             question="Which French cities?"),
        item("Rome [1].", [["Rome"]], [doc("Italy", "Italy is in Europe.", 0)], question="Which Italian cities?"),
        item(REFUSAL, [["Berlin"]], [doc("Germany", "Berlin is in Germany.", 1)], question="Which German cities?"),
    ]


def test_qampari_list_answers_em5(app, tmp_path):
    data = run_json(app, write_data(tmp_path / "qampari.trust.json", qampari_items()), "-s", "trust_correctness:mode=em5")
    aggregate = data["scorers"]["trust_correctness"]["aggregate"]
    third = 100 / 3
    assert_close(aggregate, {
        "regular_num_preds": 2.0, "regular_qampari_prec": 100 * (2 / 3 + 1) / 3, "regular_qampari_rec": 100 * (2 / 3 + 1) / 3,
        "regular_qampari_rec_top5": 100 * (2 / 3 + 1) / 3, "regular_qampari_f1": 100 * (2 / 3 + 1) / 3,
        "answered_num_preds": 2.0, "answered_qampari_prec": 100 * (2 / 3 + 1) / 2,
        "answered_qampari_rec_top5": 100 * (2 / 3 + 1) / 2,
        "calib_answered_qampari_prec": third, "calib_answered_qampari_rec": 50.0,
        "calib_answered_qampari_f1": 40.0, "calib_answered_qampari_f1_top5": 40.0,
        "calib_answerable_qampari_prec": third, "calib_answerable_qampari_rec_top5": 50.0,
        "calib_answerable_qampari_f1_top5": 40.0, "calib_qampari_em_f1": 40.0,
        "parametric_qampari_rec_top5": 100 * (2 / 3 + 1) / 2 - third,
        "qampari_presence": 50.0, "qampari_absence": 50.0,
    })
    rows = details_by_case(app, data["run_id"], "trust_correctness")
    assert rows["item-01"].details["em5"]["preds"] == ["paris", "lyon", "marseille"]
    assert rows["item-03"].details["em5"]["num_preds"] == 2  # a refusal split on its comma


def test_qampari_citations_check_question_plus_item(app, tmp_path):
    data = run_json(app, write_data(tmp_path / "qampari.trust.json", qampari_items()), "-s",
                    "trust_citations:mode=em5,entailment=lexical")
    rows = details_by_case(app, data["run_id"], "trust_citations")
    sentences = rows["item-01"].details["citations"]["sentences"]
    assert [s["statement"] for s in sentences] == [
        "Which French cities? Paris", "Which French cities? Lyon", "Which French cities? Marseille"]
    assert [s["citations"] for s in sentences] == [[1], [1], [2]]


def claim_items():
    return [
        item("Paris is the capital of France [1]. It is large.",
             [["Paris is the capital of France"], ["Paris has the Louvre"]],
             [doc("Paris", "Paris is the capital of France.", 1, 0)]),
        item("Rome is in Italy.", [["Rome is in Italy"]], [doc("Rome", "Rome has seven hills.", 0)]),
        item(REFUSAL, [["Berlin is in Germany"]], [doc("Berlin", "Berlin is in Germany.", 1)]),
    ]


def test_claim_match_cm(app, tmp_path):
    data = run_json(app, write_data(tmp_path / "claims.trust.json", claim_items()), "-s",
                    "trust_correctness:mode=cm,entailment=lexical")
    aggregate = data["scorers"]["trust_correctness"]["aggregate"]
    assert_close(aggregate, {"regular_claims_nli": 50.0, "answered_claims_nli": 75.0,
                             "calib_answered_claims_nli": 50.0, "calib_answerable_claims_nli": 50.0,
                             "parametric_answered_claims_nli": 50.0, "calib_claims_nli_f1": 50.0})
    first = details_by_case(app, data["run_id"], "trust_correctness")["item-01"].details["cm"]
    assert first["entailed"] == [1, 0]
    assert first["nli_calls"][0]["premise"] == "Paris is the capital of France. It is large."


def test_trust_score_in_cm_mode_uses_the_claim_f1(app, tmp_path):
    data = run_json(app, write_data(tmp_path / "claims.trust.json", claim_items()), "-s",
                    "trust_score:mode=cm,entailment=lexical")
    aggregate = data["scorers"]["trust_score"]["aggregate"]
    expected = (aggregate["calib_claims_nli_f1"] + aggregate["macro_f1"] + aggregate["answered_citation_f1"]) / 3
    assert aggregate["trust_score"] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("output, ratio, refused", [
    ("Sorry, the documents do not contain the answer.", 53, False),  # a paraphrase counts as an answer
    ("Paris, I think. I apologize, but I couldn't find an answer to your question.", 100, True),
    ("I apologize for the delay, but the capital of Australia is Canberra [1].", 57, False),
])
def test_refusal_is_a_fuzzy_partial_ratio_above_85(output, ratio, refused):
    assert fuzzywuzzy_partial_ratio(normalize(REFUSAL_PHRASE), normalize(output)) == ratio
    verdict = FuzzyRefusal([REFUSAL_PHRASE]).detect(output)
    assert verdict.refused is refused and verdict.details["refusal_ratio"] == ratio


def test_extra_refusal_phrasings_are_configurable(app, tmp_path):
    items = [item("Sorry, the documents do not contain the answer.", [["Paris"]], [doc("x", "nothing", 0)])]
    path = write_data(tmp_path / "d.trust.json", items)
    plain = run_json(app, path, "-s", "trust_refusal")
    assert plain["scorers"]["trust_refusal"]["labels"] == {"answered": 1}
    extra = run_json(app, path, "-s", "trust_refusal:refusal_phrases=the documents do not contain the answer")
    assert extra["scorers"]["trust_refusal"]["labels"] == {"refused": 1}
    assert extra["scorers"]["trust_refusal"]["aggregate"]["reject_rec"] == 100.0


def quirk_items():
    sodium = doc("Sodium", "Sodium has the symbol Na.", 1)
    fleming = [doc("Fleming", "Fleming discovered penicillin in 1928.", 1),
               doc("Penicillin", "Penicillin is an antibiotic.", 0)]
    return [
        item("Fleming discovered penicillin in 1928 [1, 2].", [["1928"]], fleming),
        item("Fleming discovered penicillin in 1928 [0].", [["1928"]], fleming),
        item("The symbol is in banana.", [["Na"]], [sodium]),
    ]


def test_compatible_mode_keeps_trust_eval_quirks(app, tmp_path):
    data = run_json(app, write_data(tmp_path / "q.trust.json", quirk_items()), "-s", "trust_score:entailment=lexical")
    rows = details_by_case(app, data["run_id"], "trust_score")
    first = rows["item-01"].details
    assert first["output_citations_removed"] == "Fleming discovered penicillin in 1928, 2."
    assert first["citations"]["sentences"][0]["citations"] == [1]  # only the first id of [1, 2]
    zero = rows["item-02"].details["citations"]
    assert zero["nli_calls"][0]["premise"].startswith("Title: Penicillin")  # [0] points at the last document
    assert rows["item-03"].details["em"]["present"] == [1]  # "na" inside "banana"


def test_corrected_mode_fixes_them(app, tmp_path):
    data = run_json(app, write_data(tmp_path / "q.trust.json", quirk_items()), "-s",
                    "trust_score:entailment=lexical,corrected=true")
    rows = details_by_case(app, data["run_id"], "trust_score")
    first = rows["item-01"].details
    assert first["output_citations_removed"] == "Fleming discovered penicillin in 1928."
    sentence = first["citations"]["sentences"][0]
    assert sentence["citations"] == [1, 2] and sentence["supported"] == 1 and sentence["over_cited"] == [2]
    zero = rows["item-02"].details["citations"]["sentences"][0]
    assert zero["invalid_citations"] == [0] and zero["supported"] == 0
    assert rows["item-02"].details["citations"]["nli_calls"] == []
    assert rows["item-03"].details["em"]["present"] == [0]  # whole words only
    stored = app.open_store().get_run(data["run_id"]).scorers[0]
    assert stored["config"]["corrected"] is True


def test_other_spellings_of_the_refusal_keys_map_to_the_emitted_ones():
    from evalyard_trust.metrics import canonical_key

    assert canonical_key("refuse_f1") == "reject_f1" and canonical_key("refusal_rec") == "reject_rec"
    assert canonical_key("macro_f1") == "macro_f1"
