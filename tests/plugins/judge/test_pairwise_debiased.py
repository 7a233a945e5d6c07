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
    # six ties count half each: 50%, not the mean P(NEW better) 55% (kept as mean_preference)
    assert ab["win_rate"] == 0.5 and ab["position_inconsistent"] == 1.0
    assert ab["mean_preference"] == pytest.approx(0.55)


#: The position-bound judge of the test above: "second" in both orders, a slight lean to NEW
#: (mean P(NEW better) 0.55), inside the tie margin: every case a tie.
POSITION_BOUND = [
    {"template": "judge/pairwise", "regex": r"First response:\s*<data-\w+>\s*new", "content": "second",
     "logprobs": lp(second=0.75, first=0.2, tie=0.05)},
    {"template": "judge/pairwise", "content": "second", "logprobs": lp(second=0.85, first=0.1, tie=0.05)}]


def _cli(app):
    from click.testing import CliRunner

    from evalyard.cli import cli

    return lambda *args: CliRunner().invoke(cli, [str(a) for a in args], obj=app, catch_exceptions=False)


def test_a_pairwise_ab_with_no_pair_won_says_so(app, rules, tmp_path):
    """Issue 43: eight pairs the debiased judge called ties printed a win rate of 51.8% with an
    interval above 50%, a length-controlled rate of 50.0% [50.0%, 50.0%] and 50% of "decisive"
    verdicts to the longer response. NEW's answers are longer in half the cases, so each order's
    words (always "second") go to the longer response half the time."""
    import json

    invoke = _cli(app)

    def run_of(name, answers):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"id": f"q{n}", "input": f"question {n}", "candidate": a, "reference": "x"})
                                + "\n" for n, a in enumerate(answers)))
        return json.loads(invoke("run", path, "-s", "exact_match", "--name", name, "--json").output)["run_id"]

    base = run_of("base", [f"base answer {n}" + " and more" * (n % 2) for n in range(8)])
    new = run_of("new", [f"new answer {n}" + " and more" * (1 - n % 2) for n in range(8)])
    judge = rules(POSITION_BOUND)
    ab = json.loads(invoke("compare", base, new, "--judge", "pairwise:logprobs=true", "--judge-model", judge,
                           "--json").output)["pairwise"]
    assert (ab["wins"], ab["losses"], ab["ties"]) == (0, 0, 8)
    assert ab["win_rate"] == 0.5 and ab["ci95"][0] <= 0.5 <= ab["ci95"][1]
    # every pair tied: the bootstrap has no spread, the Wilson interval says how little 8 pairs tell
    assert ab["ci_method"] == "wilson" and ab["ci95"] == pytest.approx([0.2152, 0.7848], abs=1e-4)
    assert ab["length_controlled_win_rate"] is None and ab["length_controlled_ci95"] is None
    assert "no verdict was decisive" in ab["length_controlled_note"]
    assert ab["decisive"] == 0 and ab["longer_won"] is None

    text = invoke("compare", base, new, "--judge", "pairwise:logprobs=true", "--judge-model", judge).output
    assert "win rate of NEW over BASE: 50.0% [21.5%, 78.5%]" in text
    assert "length-controlled win rate: cannot be estimated (no verdict was decisive)" in text
    assert "[50.0%, 50.0%]" not in text.split("length-controlled win rate:")[1].splitlines()[0]
    assert "decisive verdicts that went to the longer response: none (no verdict was decisive)" in text


def test_a_tie_does_not_pass(app, rules, tmp_path):
    """Issue 43: ``run -s pairwise:logprobs=true`` passed a tie whose value was at or above 0.5
    (pass 37.5% beside labels equal=8). Pass is the candidate's win; the words judge's split
    (value 0.5) does not pass either."""
    import json

    invoke = _cli(app)
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"id": f"p{n}", "input": f"question {n}", "candidate": f"new answer {n}",
                                        "reference": f"base answer {n}"}) + "\n" for n in range(4)))
    judge = rules(POSITION_BOUND)
    out = json.loads(invoke("run", data, "-s", "pairwise:logprobs=true", "--judge-model", judge, "--json").output)
    summary = out["scorers"]["pairwise"] if "scorers" in out else out["summary"]["pairwise"]
    assert summary["labels"] == {"equal": 4} and summary["mean"] == pytest.approx(0.55)
    assert summary["passed"] == 0 and summary["pass_rate"] == 0.0
    words = json.loads(invoke("run", data, "-s", "pairwise", "--judge-model", judge, "--json").output)
    split = words["scorers"]["pairwise"] if "scorers" in words else words["summary"]["pairwise"]
    assert split["labels"] == {"inconsistent": 4} and split["mean"] == 0.5 and split["pass_rate"] == 0.0
