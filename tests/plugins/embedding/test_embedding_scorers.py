"""The embedding scorers on real text with the bundled all-MiniLM-L6-v2 (no network).

The model is loaded once for the whole session (``bundled`` fixture); the
plugin keeps it per process anyway, so every test reuses that copy.
"""

from __future__ import annotations

import os
import threading

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

torch = pytest.importorskip("torch")
pytest.importorskip("bert_score")

from evalyard import Case  # noqa: E402
from evalyard_embedding.bertscore import BertScore  # noqa: E402
from evalyard_embedding.hedging import HedgingLanguage  # noqa: E402
from evalyard_embedding.models import bundled_model_dir, clear_caches, get_model, loaded_models  # noqa: E402
from evalyard_embedding.similarity import SemanticSimilarity  # noqa: E402

IDENTICAL = [
    ("The capital of France is Paris.", "The capital of France is Paris."),
    ("Water boils at 100 degrees Celsius at sea level.", "Water boils at 100 degrees Celsius at sea level."),
]
PARAPHRASES = [
    ("The cat sat on the mat.", "A cat was sitting on the mat."),
    ("The capital of France is Paris.", "Paris is the capital city of France."),
    ("The function returns None when the list is empty.", "If the list is empty, the function gives back None."),
    ("The meeting was moved to Friday afternoon.", "They rescheduled the meeting for Friday afternoon."),
]
UNRELATED = [
    ("The capital of France is Paris.", "Photosynthesis turns light into chemical energy."),
    ("Interest rates rose by half a point in March.", "My grandmother grows tomatoes in her garden."),
    ("The function returns None when the list is empty.", "The choir sang in an old stone church."),
    ("The meeting was moved to Friday afternoon.", "Penguins cannot fly but swim very well."),
]
HEDGING = [
    "I'm not entirely sure, but I think the meeting is on Tuesday.",
    "As an AI language model, I don't have personal beliefs about politics.",
    "Honestly, I don't know.",
    "There are many views on this topic and experts disagree.",
    "I could be mistaken, but I believe it was written in 1850.",
    "It depends, you could maybe try contacting support.",
]
CONFIDENT = [
    "Paris is the capital of France.",
    "The meeting is on Tuesday at 10 am in room 4.",
    "To reverse a list in Python, call list.reverse() or use slicing with [::-1].",
    "Take the second exit at the roundabout and the station is on your left.",
    "Your order has been shipped and will arrive on Friday.",
    "Yes, I can help with that.",
]


def cases(pairs, prefix="c"):
    return [Case(id=f"{prefix}{i}", reference=r, candidate=c) for i, (r, c) in enumerate(pairs)]


def values(scores):
    assert all(s.error is None for s in scores), [s.error for s in scores]
    return [s.value for s in scores]


@pytest.fixture(scope="session")
def bundled():
    """The bundled model, loaded once for the session."""
    return get_model("sentence-transformers/all-MiniLM-L6-v2")


@pytest.fixture(scope="session")
def bert_score_scorer(bundled):
    """bert-score's own BERTScorer on the same model folder, for comparison."""
    from bert_score import BERTScorer

    return BERTScorer(model_type=str(bundled_model_dir()), num_layers=6)


@pytest.fixture
def embedding_plugin():
    """The plugin as the platform sees it: via its entry point, else registered for the test."""
    from evalyard import Application

    app = Application()
    if "bertscore" not in app.registry.scorers:
        import evalyard_embedding.plugin as module

        app.register_plugin(module, name="embedding")
    return app.registry


# -- registration ---------------------------------------------------------------


def test_registered_as_plugin(embedding_plugin):
    scorers = embedding_plugin.scorers
    assert scorers["bertscore"].obj.requires == ("reference", "candidate")
    assert scorers["semantic_similarity"].obj.requires == ("reference", "candidate")
    hedging = scorers["hedging_language"].obj
    assert hedging.requires == ("candidate",) and hedging.labels == ("hedging", "not hedging")
    assert hedging.higher_is_better is False


# -- bertscore -------------------------------------------------------------------


def test_bertscore_orders_identical_paraphrase_unrelated(bundled):
    scorer = BertScore()
    identical = values(scorer.score_batch(cases(IDENTICAL)))
    paraphrase = values(scorer.score_batch(cases(PARAPHRASES)))
    unrelated = values(scorer.score_batch(cases(UNRELATED)))
    assert min(identical) > 0.999
    assert min(paraphrase) > 0.7
    assert max(unrelated) < 0.2
    assert min(paraphrase) > max(unrelated) + 0.5


def test_bertscore_details_and_value(bundled):
    score = BertScore().score_batch(cases(PARAPHRASES[:1]))[0]
    assert set(score.details) == {"precision", "recall", "f1"}
    assert score.value == score.details["f1"]
    assert 0 < score.details["precision"] < 1 and 0 < score.details["recall"] < 1


def bert_score_pair_by_pair(scorer, pairs):
    """bert-score's (P, R, F1) for each pair scored on its own.

    On its own, because bert-score's value for a pair also depends on the
    other pairs in its batch (padding; see ``matching.precision_recall_f1``).
    """
    return [tuple(t.item() for t in scorer.score([c], [r])) for r, c in pairs]


def test_bertscore_equals_bert_score_library(bundled, bert_score_scorer):
    pairs = IDENTICAL + PARAPHRASES + UNRELATED
    ours = BertScore().score_batch(cases(pairs))
    for score, expected in zip(ours, bert_score_pair_by_pair(bert_score_scorer, pairs)):
        details = score.details
        assert (details["precision"], details["recall"], details["f1"]) == pytest.approx(expected, abs=1e-6)


def test_bert_score_batches_change_its_values_ours_do_not(bundled, bert_score_scorer):
    # The bug the shape grouping avoids: in a batch, bert-score lets a token match padding at cosine 0.
    pairs = PARAPHRASES + UNRELATED
    batched = bert_score_scorer.score([c for _, c in pairs], [r for r, _ in pairs])[2].tolist()
    alone = [f for _, _, f in bert_score_pair_by_pair(bert_score_scorer, pairs)]
    assert max(abs(a - b) for a, b in zip(batched, alone)) > 1e-3
    assert values(BertScore().score_batch(cases(pairs))) == pytest.approx(alone, abs=1e-6)


@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")  # inside bert-score
def test_bertscore_idf_and_rescale_equal_bert_score_library(bundled):
    from bert_score import BERTScorer

    from evalyard_embedding.baselines import BUNDLED_BASELINE

    pairs = PARAPHRASES + UNRELATED
    references = [r for r, _ in pairs]
    theirs = BERTScorer(
        model_type=str(bundled_model_dir()), num_layers=6, idf=True, idf_sents=references, nthreads=0,
        lang="en", rescale_with_baseline=True, baseline_path=str(BUNDLED_BASELINE),
    )
    ours = BertScore(idf=True, rescale_with_baseline=True).score_batch(cases(pairs))
    for score, expected in zip(ours, bert_score_pair_by_pair(theirs, pairs)):
        details = score.details
        assert details["rescaled"] is True
        assert (details["precision"], details["recall"], details["f1"]) == pytest.approx(expected, abs=1e-6)


def test_idf_file_gives_batch_independent_weights(bundled, tmp_path):
    pairs = PARAPHRASES + UNRELATED
    corpus = tmp_path / "idf.txt"
    corpus.write_text("\n".join(r for r, _ in pairs) + "\n", encoding="utf-8")
    from_batch = values(BertScore(idf=True).score_batch(cases(pairs)))
    from_file = BertScore(idf=True, idf_file=str(corpus))
    assert values(from_file.score_batch(cases(pairs))) == pytest.approx(from_batch, abs=1e-6)
    # one case at a time: batch idf would change, file idf does not
    assert [values(from_file.score_batch(cases([pair])))[0] for pair in pairs[:2]] == pytest.approx(
        from_batch[:2], abs=1e-6
    )
    assert values(BertScore().score_batch(cases(pairs[:1]))) != pytest.approx(from_batch[:1], abs=1e-3)


def test_rescaled_unrelated_pairs_land_near_zero(bundled):
    scores = values(BertScore(rescale_with_baseline=True).score_batch(cases(UNRELATED + PARAPHRASES)))
    unrelated, paraphrase = scores[: len(UNRELATED)], scores[len(UNRELATED):]
    assert all(abs(v) < 0.15 for v in unrelated)
    assert min(paraphrase) > 0.6


def test_arthur_compat_weighting(bundled):
    pairs = PARAPHRASES + UNRELATED
    arthur = BertScore(weighting="arthur_compat").score_batch(cases(pairs))
    for score in arthur:
        expected = 0.1 * score.details["precision"] + 0.9 * score.details["recall"]
        assert score.value == pytest.approx(expected, abs=1e-12)
    half = BertScore(weighting="arthur_compat", precision_weight=0.5).score_batch(cases(pairs[:1]))[0]
    assert half.value == pytest.approx((half.details["precision"] + half.details["recall"]) / 2)
    recall = BertScore(weighting="recall").score_batch(cases(pairs[:1]))[0]
    assert recall.value == recall.details["recall"]


def test_bertscore_values_are_stable(bundled):
    pairs = IDENTICAL + PARAPHRASES + UNRELATED
    first = values(BertScore().score_batch(cases(pairs)))
    clear_caches()  # recompute every embedding, in a different batch make-up
    alone = [values(BertScore().score_batch(cases([pair])))[0] for pair in pairs[:3]]
    again = values(BertScore(encode_batch_size=3).score_batch(cases(list(reversed(pairs)))))[::-1]
    assert alone == pytest.approx(first[:3], abs=1e-6)
    assert again == pytest.approx(first, abs=1e-6)


def test_bertscore_empty_and_missing_texts(bundled):
    scores = BertScore().score_batch([
        Case(id="empty-candidate", reference="The cat sat on the mat.", candidate="   "),
        Case(id="empty-reference", reference="", candidate="The cat sat on the mat."),
        Case(id="no-reference", candidate="The cat sat on the mat."),
        Case(id="fine", reference="The cat sat on the mat.", candidate="A cat sat on a mat."),
    ])
    assert scores[0].value == 0.0 and scores[0].details["empty_candidate"] is True
    assert scores[1].value is None and "reference is empty" in scores[1].error
    assert scores[2].value is None and "reference" in scores[2].error
    assert scores[3].error is None and scores[3].value > 0.7


def test_bertscore_reports_truncation(bundled):
    long_text = " ".join(["The quick brown fox jumps over the lazy dog."] * 80)  # ~800 tokens
    score = BertScore().score_batch([Case(id="long", reference=long_text, candidate="A fox jumps.")])[0]
    assert score.error is None and score.details["truncated"] == ["reference"]


def test_model_given_as_a_directory_needs_a_layer(bundled):
    folder = str(bundled_model_dir())
    failed = BertScore(model=folder).score_batch(cases(PARAPHRASES[:1]))[0]
    assert failed.value is None and "layer" in failed.error
    explicit = BertScore(model=folder, layer=6).score_batch(cases(PARAPHRASES[:1]))[0]
    default = BertScore().score_batch(cases(PARAPHRASES[:1]))[0]
    assert explicit.value == default.value
    assert len([m for m in loaded_models() if m.source == folder]) == 1  # same weights, loaded once


def test_missing_model_fails_each_case_clearly(tmp_path):
    scores = BertScore(model=str(tmp_path / "no-such-model"), layer=3).score_batch(cases(PARAPHRASES[:2]))
    assert all(s.value is None and "cannot load model" in s.error for s in scores)
    scores = SemanticSimilarity(model="no-such-org/no-such-model").score_batch(cases(PARAPHRASES[:1]))
    assert scores[0].value is None and "offline" in scores[0].error


def test_lower_layer_and_shipped_baseline_rows(bundled):
    from evalyard_embedding.baselines import BUNDLED_BASELINE, read_baseline

    assert [read_baseline(BUNDLED_BASELINE, layer) for layer in range(7)]  # one row per layer 0..6
    rescaled = BertScore(layer=4, rescale_with_baseline=True).score_batch(cases(PARAPHRASES + UNRELATED))
    assert all(s.error is None for s in rescaled)
    assert min(values(rescaled)[: len(PARAPHRASES)]) > max(values(rescaled)[len(PARAPHRASES):])


def test_shipped_baseline_is_reproduced_by_the_script(bundled):
    from evalyard_embedding.baselines import BUNDLED_BASELINE, read_baseline
    from evalyard_embedding.compute_baseline import SENTENCES_FILE, compute_baseline, read_groups, unrelated_pairs

    groups = read_groups(SENTENCES_FILE)
    pairs = unrelated_pairs(groups)
    assert len(groups) == 12 and len(pairs) == 96 * 88
    group_of = {sentence: i for i, group in enumerate(groups) for sentence in group}
    assert all(group_of[r] != group_of[c] for r, c in pairs)
    [(layer, p, r, f)] = compute_baseline("sentence-transformers/all-MiniLM-L6-v2", pairs, layers=[6])
    assert (p, r, f) == pytest.approx(read_baseline(BUNDLED_BASELINE, 6), abs=1e-6)


# -- semantic_similarity ---------------------------------------------------------


def test_semantic_similarity_orders_pairs(bundled):
    scorer = SemanticSimilarity()
    assert min(values(scorer.score_batch(cases(IDENTICAL)))) > 0.999
    paraphrase = values(scorer.score_batch(cases(PARAPHRASES)))
    unrelated = values(scorer.score_batch(cases(UNRELATED)))
    assert min(paraphrase) > 0.7 and max(unrelated) < 0.2


def test_semantic_similarity_equals_sentence_transformers(bundled):
    sentence_transformers = pytest.importorskip("sentence_transformers")
    pairs = PARAPHRASES + UNRELATED
    model = sentence_transformers.SentenceTransformer(str(bundled_model_dir()), device="cpu")
    refs = model.encode([r for r, _ in pairs], convert_to_tensor=True, normalize_embeddings=True)
    cands = model.encode([c for _, c in pairs], convert_to_tensor=True, normalize_embeddings=True)
    expected = (refs * cands).sum(dim=1).tolist()
    assert values(SemanticSimilarity().score_batch(cases(pairs))) == pytest.approx(expected, abs=1e-5)


def test_semantic_similarity_empty_texts(bundled):
    scores = SemanticSimilarity().score_batch([
        Case(id="a", reference="Paris is in France.", candidate=""),
        Case(id="b", reference=" ", candidate="Paris is in France."),
    ])
    assert scores[0].value == 0.0 and scores[0].details == {"empty_candidate": True}
    assert scores[1].error and scores[1].value is None


# -- hedging_language -------------------------------------------------------------


def hedging_cases(texts, prefix="h"):
    return [Case(id=f"{prefix}{i}", candidate=text) for i, text in enumerate(texts)]


def test_hedging_labels(bundled):
    scorer = HedgingLanguage()
    hedges = scorer.score_batch(hedging_cases(HEDGING))
    confident = scorer.score_batch(hedging_cases(CONFIDENT))
    assert [s.label for s in hedges] == ["hedging"] * len(HEDGING), [(s.value, s.details) for s in hedges]
    assert [s.label for s in confident] == ["not hedging"] * len(CONFIDENT), [s.value for s in confident]
    assert all(s.passed is False for s in hedges) and all(s.passed is True for s in confident)
    assert min(values(hedges)) > max(values(confident))
    first = hedges[0].details
    assert first["phrase"] in scorer.config.phrases and first["matched_text"] == "I'm not entirely sure,"


def test_hedging_clause_level_finds_a_hedge_inside_a_long_answer(bundled):
    answer = (
        "I'm not sure, but I think so. The Treaty of Westphalia was signed in 1648 in Osnabrueck and Muenster, "
        "ending the Thirty Years' War and setting out principles of state sovereignty that shaped Europe."
    )
    by_clause = HedgingLanguage().score_batch(hedging_cases([answer]))[0]
    whole_text = HedgingLanguage(granularity="text").score_batch(hedging_cases([answer]))[0]
    assert by_clause.label == "hedging" and whole_text.label == "not hedging"


def test_hedging_custom_phrases_and_threshold(bundled):
    text = ["The refund policy does not cover final-sale items."]
    custom = HedgingLanguage.make_config({"phrases": "Refunds are not available for sale items.", "hedge_threshold": "0.5"})
    score = HedgingLanguage(custom).score_batch(hedging_cases(text))[0]
    assert score.label == "hedging" and score.details["phrase"] == "Refunds are not available for sale items."
    strict = HedgingLanguage(hedge_threshold=0.99).score_batch(hedging_cases(HEDGING[:1]))[0]
    assert strict.label == "not hedging"


def test_hedging_with_bertscore_f1(bundled):
    scorer = HedgingLanguage(similarity="bertscore_f1")
    hedges = values(scorer.score_batch(hedging_cases(HEDGING)))
    confident = values(scorer.score_batch(hedging_cases(CONFIDENT)))
    assert sum(hedges) / len(hedges) > sum(confident) / len(confident) + 0.2


def test_hedging_empty_candidate(bundled):
    scores = HedgingLanguage().score_batch([Case(id="e", candidate=""), Case(id="n", candidate=None)])
    assert (scores[0].value, scores[0].label) == (0.0, "not hedging")
    assert scores[1].error and scores[1].value is None


# -- sharing and caching ---------------------------------------------------------------


class ForwardCounter:
    """Counts texts passed through the model (rows of every forward batch)."""

    def __init__(self, model):
        self.rows = 0
        self.handle = model.register_forward_hook(self._count)

    def _count(self, module, args, kwargs_or_output, *rest):
        self.rows += args[0].shape[0] if args else 0

    def close(self):
        self.handle.remove()


def test_one_model_shared_and_repeated_texts_embedded_once(bundled):
    reference = "The meeting was moved to Friday afternoon."
    batch = [Case(id=f"r{i}", reference=reference, candidate=f"The meeting is on Friday, item {i}.") for i in range(5)]
    counter = ForwardCounter(bundled.model)
    try:
        clear_caches()
        BertScore().score_batch(batch)
        assert counter.rows == 6  # one shared reference + five candidates
        BertScore().score_batch(batch)
        assert counter.rows == 6  # second run: everything from the cache
        SemanticSimilarity().score_batch(batch)
        HedgingLanguage().score_batch(batch)
        rows_after_first_hedging = counter.rows
        HedgingLanguage().score_batch(hedging_cases(["Paris is in France."]))
        assert counter.rows == rows_after_first_hedging + 1  # hedge phrases were not embedded again
    finally:
        counter.close()
    assert [m for m in loaded_models() if m.source == str(bundled_model_dir())] == [bundled]


def test_scorers_in_parallel_threads_agree(bundled):
    pairs = PARAPHRASES + UNRELATED
    expected = values(BertScore().score_batch(cases(pairs)))
    clear_caches()
    results: dict[int, list[float]] = {}

    def work(slot):
        results[slot] = values(BertScore().score_batch(cases(pairs)))

    threads = [threading.Thread(target=work, args=(slot,)) for slot in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for slot in range(3):
        assert results[slot] == pytest.approx(expected, abs=1e-6)
