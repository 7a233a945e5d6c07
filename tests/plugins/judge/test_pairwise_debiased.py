"""Position-debiased pairwise (``pairwise:logprobs=true``): each order's label probabilities,
averaged over both orders, a tie within the margin; position consistency in the details. Through
the scripted model behind litellm, which returns the first answer token's alternatives."""

from __future__ import annotations

import math

import pytest

from evalyard import Case, ConfigError
from evalyard.models import label_probabilities
from evalyard_judge.arthur import Pairwise

PAIR = Case(id="p", input="How do I boil an egg?", candidate="GOOD: simmer it for nine minutes.",
            reference="BAD: eggs cannot be boiled.")
CANDIDATE_FIRST = r"First response:\s*<data-\w+>\s*GOOD"


def lp(**probabilities: float) -> dict[str, float]:
    return {label: math.log(p) for label, p in probabilities.items()}


def test_a_judge_that_always_names_the_second_position_gives_an_honest_tie(rules, score):
    # 90% "second" in both orders: all position, no content.
    model = rules([{"template": "judge/pairwise", "content": "second", "logprobs": lp(second=0.9, first=0.1)}])
    [result] = score(Pairwise(model=model, logprobs=True), PAIR)
    assert result.error is None
    assert result.value == pytest.approx(0.5) and result.label == "equal"
    assert result.details["position_consistent"] is False
    assert result.details["winners"] == ["reference", "candidate"]
    assert [v["details"]["p_labels"]["second"] for v in result.details["verdicts"]] == [pytest.approx(0.9)] * 2


def test_a_preference_under_a_position_pull_still_wins_by_its_probability(rules, score):
    # The judge leans to "second" in both orders, but much less when the good response is first:
    # P(candidate better) is 0.45 with the candidate first and 0.95 with it second, mean 0.70.
    model = rules([
        {"template": "judge/pairwise", "regex": CANDIDATE_FIRST, "content": "second",
         "logprobs": lp(second=0.55, first=0.45)},
        {"template": "judge/pairwise", "content": "second", "logprobs": lp(second=0.95, first=0.05)}])
    [result] = score(Pairwise(model=model, logprobs=True), PAIR)
    assert result.value == pytest.approx(0.70) and result.label == "candidate"
    assert result.details["position_consistent"] is False and result.details["tie_margin"] == 0.1
    [wide] = score(Pairwise(model=model, logprobs=True, tie_margin=0.25), PAIR)
    assert wide.value == pytest.approx(0.70) and wide.label == "equal"
    # the verdict by words alone (today's default) calls the same replies a split
    [words] = score(Pairwise(model=model), PAIR)
    assert (words.value, words.label, words.details["position_consistent"]) == (0.5, "inconsistent", False)


def test_a_consistent_judge_is_position_consistent_and_tie_counts_half(rules, score):
    model = rules([
        {"template": "judge/pairwise", "regex": CANDIDATE_FIRST, "content": "first",
         "logprobs": lp(first=0.8, tie=0.2)},
        {"template": "judge/pairwise", "content": "second", "logprobs": lp(second=0.6, tie=0.4)}])
    [result] = score(Pairwise(model=model, logprobs=True), PAIR)
    # candidate first: 0.8 + 0.2/2 = 0.9; candidate second: 0.6 + 0.4/2 = 0.8
    assert result.value == pytest.approx(0.85) and result.label == "candidate"
    assert result.details["position_consistent"] is True


def test_no_label_among_the_tokens_falls_back_to_the_words_and_says_so(rules, score):
    model = rules([{"template": "judge/pairwise", "regex": CANDIDATE_FIRST, "content": "first",
                    "logprobs": {"Sure": -0.1}},
                   {"template": "judge/pairwise", "content": "second", "logprobs": {"Sure": -0.1}}])
    [result] = score(Pairwise(model=model, logprobs=True), PAIR)
    assert result.value == 1.0 and result.label == "candidate"
    assert all("unavailable" in v["details"]["logprobs"] for v in result.details["verdicts"])


def test_tie_margin_out_of_range_is_refused():
    with pytest.raises(ConfigError, match="tie_margin"):
        Pairwise(model="scripted/x", tie_margin=0.5)


def test_label_probabilities_fold_variants_and_split_labels():
    labels = ["first", "second", "tie", "cannot_tell"]
    shares = label_probabilities([{" ": -0.01}, {"First": math.log(0.3), " first": math.log(0.1),
                                                  "SECOND": math.log(0.4), "cannot": math.log(0.2)}], labels)
    assert shares == pytest.approx({"first": 0.4, "second": 0.4, "tie": 0.0, "cannot_tell": 0.2})
    # a label split by the tokenizer: "t" starts "tie" only
    assert label_probabilities({"t": 0.0}, labels) == pytest.approx({"first": 0, "second": 0, "tie": 1,
                                                                     "cannot_tell": 0})
    assert label_probabilities({"yes": -0.1}, labels) is None
    # a token that starts two labels says nothing
    assert label_probabilities({"no": 0.0}, ["no_idea", "no_way"]) is None


def test_compare_with_a_debiased_judge_counts_a_position_bound_judge_as_ties(app, rules, tmp_path):
    import json

    from click.testing import CliRunner

    from evalyard.cli import cli

    def invoke(*args):
        return CliRunner().invoke(cli, [str(a) for a in args], obj=app, catch_exceptions=False)

    def run_of(name, answers):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"id": f"q{n}", "input": f"question {n}", "candidate": a, "reference": "x"})
                                + "\n" for n, a in enumerate(answers)))
        return json.loads(invoke("run", path, "-s", "exact_match", "--name", name, "--json").output)["run_id"]

    base = run_of("base", [f"base answer {n}" for n in range(6)])
    new = run_of("new", [f"new answer {n}" for n in range(6)])
    # "second" either way; a slight lean to NEW (P(NEW better) 0.225 shown first, 0.875 shown second:
    # mean 0.55), within the default margin: a tie, not a win
    bound = rules([{"template": "judge/pairwise", "regex": r"First response:\s*<data-\w+>\s*new", "content": "second",
                    "logprobs": lp(second=0.75, first=0.2, tie=0.05)},
                   {"template": "judge/pairwise", "content": "second", "logprobs": lp(second=0.85, first=0.1, tie=0.05)}])
    result = invoke("compare", base, new, "--judge", "pairwise:logprobs=true", "--judge-model", bound, "--json")
    assert result.exit_code == 0, result.output
    ab = json.loads(result.output)["pairwise"]
    assert (ab["wins"], ab["losses"], ab["ties"]) == (0, 0, 6)
    assert ab["win_rate"] == pytest.approx(0.55) and ab["position_inconsistent"] == 1.0
