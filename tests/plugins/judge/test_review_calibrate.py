"""``evalyard calibrate --run PAIRWISE_RUN --reviews``: a pairwise judge's run (``compare BASE NEW
--judge``) calibrated on the people's blind reviews of BASE and NEW (``evalyard review``) as its
labels, through the CLI, a real database and a scripted judge that prefers the longer answer."""

from __future__ import annotations

import json

import pytest

from test_pairwise_compare import LONGER_WINS, invoke, long_answer, short_answer, write_run_data


def test_the_reviews_are_a_pairwise_judges_labels(app, rules, tmp_path):
    from evalyard.analysis.review_sample import left_side
    from evalyard.reviewing import open_session, record

    new_is_longer = [n % 4 != 0 for n in range(12)]
    base = json.loads(invoke(app, "run", write_run_data(tmp_path / "base.jsonl", [
        short_answer(n) if longer else long_answer(n) for n, longer in enumerate(new_is_longer)]),
        "-s", "exact_match", "--name", "base", "--json").output)["run_id"]
    new = json.loads(invoke(app, "run", write_run_data(tmp_path / "new.jsonl", [
        long_answer(n) if longer else short_answer(n) for n, longer in enumerate(new_is_longer)]),
        "-s", "exact_match", "--name", "new", "--json").output)["run_id"]
    model = rules(LONGER_WINS)
    pairwise = json.loads(invoke(app, "compare", base, new, "--judge", "pairwise", "--judge-model", model,
                                 "--json").output)["pairwise"]["run_id"]

    done = invoke(app, "calibrate", "--run", pairwise, "--reviews")
    assert done.exit_code == 2 and f"runs {base} and {new} have no reviews" in done.output

    # two reviewers: they prefer the longer answer, except on q05 and q06, where they prefer the shorter
    store = app.open_store(None)
    session, _ = open_session(store, base, new, size=12, uniform=True)
    expected = {}
    for n, longer in enumerate(new_is_longer):
        case_id = f"q{n:02d}"
        better = "new" if longer != (n in (5, 6)) else "base"
        expected[case_id] = "candidate" if better == "new" else "reference"
        for reviewer in ("ann", "bob"):
            record(store, session, case_id, reviewer, "A" if left_side(session.secret, reviewer, case_id) == better else "B")

    report = json.loads(invoke(app, "calibrate", "--run", pairwise, "--reviews", "--json").output)
    assert report["data"] == f"reviews of {base} vs {new}" and report["compared"] == 12
    assert report["balance"] == {"candidate": 7, "reference": 5}
    assert sorted(d["id"] for d in report["disagreements"]) == ["q05", "q06"]
    assert report["at_threshold"]["accuracy"] == pytest.approx(10 / 12)
    text = invoke(app, "calibrate", "--run", pairwise, "--reviews").output
    assert f"pairwise vs metadata.human_label (run {pairwise}): 12 cases, 12 compared" in text

    # bad input: one line, exit 2
    assert invoke(app, "calibrate", "--run", base, "--reviews").exit_code == 2
    assert "not a pairwise judge's run" in invoke(app, "calibrate", "--run", base, "--reviews").output
    assert "give no DATA" in invoke(app, "calibrate", str(tmp_path / "base.jsonl"), "--run", pairwise,
                                    "--reviews").output
