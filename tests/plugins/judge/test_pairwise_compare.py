"""`evalyard compare BASE NEW --judge pairwise`: an A/B of two runs' responses with the pairwise
judge in both orders, through the CLI, a real database and a scripted judge that always prefers
the longer response."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from evalyard.cli import cli

#: The pairwise template shows each response between data markers on lines of their own; a
#: response of 100 characters or more is "long". The judge picks the long one, or calls a tie.
LONGER_WINS = [
    {"template": "judge/pairwise", "regex": r"First response:\n<data-\w+>\n[^\n]{100,}\n</data-", "content": "first"},
    {"template": "judge/pairwise", "regex": r"Second response:\n<data-\w+>\n[^\n]{100,}\n</data-", "content": "second"},
    {"template": "judge/pairwise", "content": "tie"},
]


def invoke(app, *args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj=app, catch_exceptions=False)


def write_run_data(path, answers):
    path.write_text("".join(json.dumps({"id": f"q{n:02d}", "input": f"question {n:02d}", "candidate": answer,
                                        "reference": "x"}) + "\n" for n, answer in enumerate(answers)))
    return path


def long_answer(n: int) -> str:
    return f"answer {n:02d} " + "with a great deal of padding that adds nothing " * (3 + n % 3)


def short_answer(n: int) -> str:
    return f"answer {n:02d}" + "!" * (n % 5)


def test_a_judge_that_prefers_length_wins_raw_but_not_length_controlled(app, rules, tmp_path):
    new_is_longer = [n % 5 != 0 for n in range(20)]  # NEW is the longer one in 16 of 20 cases
    base_answers = [short_answer(n) if longer else long_answer(n) for n, longer in enumerate(new_is_longer)]
    new_answers = [long_answer(n) if longer else short_answer(n) for n, longer in enumerate(new_is_longer)]
    base = json.loads(invoke(app, "run", write_run_data(tmp_path / "base.jsonl", base_answers), "-s", "exact_match",
                             "--name", "base", "--json").output)["run_id"]
    new = json.loads(invoke(app, "run", write_run_data(tmp_path / "new.jsonl", new_answers), "-s", "exact_match",
                            "--name", "new", "--json").output)["run_id"]
    model = rules(LONGER_WINS)
    result = invoke(app, "compare", base, new, "--judge", "pairwise", "--judge-model", model, "--json")
    assert result.exit_code == 0, result.output
    ab = json.loads(result.output)["pairwise"]
    assert ab["cases"] == 20 and ab["errors"] == 0
    assert ab["win_rate"] == pytest.approx(0.8) and (ab["wins"], ab["losses"], ab["ties"]) == (16, 4, 0)
    assert ab["ci95"][0] > 0.55  # the raw win rate is clearly above a coin flip
    assert ab["position_inconsistent"] == 0.0
    assert ab["longer_won"] == 1.0 and ab["length_explains_all"] is True
    assert abs(ab["length_controlled_win_rate"] - 0.5) < 0.1
    assert ab["length_controlled_ci95"] is None  # resampling cases that length fully explains says nothing

    # stored as a run of its own: a second compare finds it instead of judging again
    runs_before = len(json.loads(invoke(app, "runs", "list", "--json").output))
    again = json.loads(invoke(app, "compare", base, new, "--judge", "pairwise", "--judge-model", model,
                              "--json").output)["pairwise"]
    assert again["run_id"] == ab["run_id"] and again["win_rate"] == ab["win_rate"]
    assert len(json.loads(invoke(app, "runs", "list", "--json").output)) == runs_before

    text = invoke(app, "compare", base, new, "--judge", "pairwise", "--judge-model", model).output
    assert "win rate of NEW over BASE: 80.0%" in text and "length-controlled win rate: " in text
    assert "WARNING: length alone explains every decisive verdict" in text
    refused = invoke(app, "compare", base, new, "--judge", "exact_match")
    assert refused.exit_code == 2 and "not a pairwise judge" in refused.output

    page = tmp_path / "ab.html"
    assert invoke(app, "report", new, "--compare", base, "-o", page).exit_code == 0
    html = page.read_text()
    assert "length-controlled win rate" in html and 'data-stat="win_rate">0.800' in html


def test_an_interrupted_pairwise_run_is_resumed(app, rules, tmp_path):
    from sqlalchemy import delete

    from evalyard.store import ResultRow

    base = json.loads(invoke(app, "run", write_run_data(tmp_path / "b.jsonl", [short_answer(n) for n in range(4)]),
                             "-s", "exact_match", "--json").output)["run_id"]
    new = json.loads(invoke(app, "run", write_run_data(tmp_path / "n.jsonl", [long_answer(n) for n in range(4)]),
                            "-s", "exact_match", "--json").output)["run_id"]
    model = rules(LONGER_WINS)
    first = json.loads(invoke(app, "compare", base, new, "--judge", "pairwise", "--judge-model", model,
                              "--json").output)["pairwise"]
    assert first["cases"] == 4 and first["win_rate"] == 1.0
    store = app.open_store(None)
    # as a compare killed before its last batch was written leaves it
    with store.engine.begin() as connection:
        connection.execute(delete(ResultRow).where(ResultRow.run_id == first["run_id"], ResultRow.case_id == "q03"))
    store.set_status(first["run_id"], "interrupted")
    resumed = json.loads(invoke(app, "compare", base, new, "--judge", "pairwise", "--judge-model", model,
                                "--json").output)["pairwise"]
    assert resumed["run_id"] == first["run_id"] and resumed["cases"] == 4
    assert store.get_run(first["run_id"]).status == "completed"
