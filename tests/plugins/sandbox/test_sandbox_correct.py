"""Correct programs pass: the default policy never loses a correct answer to the sandbox.

The corpus (correct_programs.py) is ordinary Python well beyond HumanEval's style;
every program there runs correctly under plain ``python3``. Scored in one batch
through the real scorer and worker.
"""

from __future__ import annotations

from collections import Counter

from correct_programs import PROGRAMS
from sandbox_helpers import code_case


def test_the_corpus_is_broad():
    assert len(PROGRAMS) >= 150
    assert len({name for name, _, _ in PROGRAMS}) == len(PROGRAMS)


def test_every_correct_program_passes_under_the_default_policy(sandbox):
    scorer = sandbox()
    assert scorer.config.policy == "os_only"
    cases = [code_case(code, tests, name) for name, code, tests in PROGRAMS]
    scores = scorer.score_batch(cases)
    failures = {name: (score.label, score.details.get("message") or score.error, score.details.get("traceback"))
                for (name, _, _), score in zip(PROGRAMS, scores) if score.label != "pass"}
    assert failures == {}
    assert all(score.value == 1.0 and score.error is None for score in scores)


def test_the_restricted_policy_reports_refusals_not_failures(sandbox):
    """Under the opt-in restricted policy a correct program is never scored 0 for what the policy
    refuses: it passes, or it is a scorer error labelled ``refused`` naming the refusal."""
    scores = sandbox(policy="restricted").score_batch(
        [code_case(code, tests, name) for name, code, tests in PROGRAMS])
    labels = Counter(score.label for score in scores)
    assert set(labels) <= {"pass", "refused"}, labels
    assert labels["pass"] > 30 and labels["refused"] > 30
    for score in scores:
        if score.label == "refused":
            assert score.value is None and score.error.startswith("policy refusal (restricted): ")
            assert score.details["policy_refusals"]
