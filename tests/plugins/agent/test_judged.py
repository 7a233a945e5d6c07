"""The judged conversation scorers as users run them: the CLI, the scripted judge behind litellm
(``--judge-model scripted/RULES``), the store; per-turn verdicts in the details, unreadable
answers recorded as errors (never 0), cases without a conversation refused before anything is
stored, and the judge's calibration against human labels like every judge's."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from testutil import write
from evalyard.cli import cli

CHAT = [
    {"role": "system", "content": "You are Ada, the support agent of a bank. Never give investment advice."},
    {"role": "user", "content": "My name is Kim and my card 4411 is blocked."},
    {"role": "assistant", "content": "Sorry to hear that, Kim. Let me look at card 4411.",
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "card_status", "arguments": "{\"card\": \"4411\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "blocked: three wrong PINs"},
    {"role": "assistant", "content": "It was blocked after three wrong PINs. I can unblock it now."},
    {"role": "user", "content": "Yes please. Also, should I buy bitcoin?"},
    {"role": "assistant", "content": "What was your card number again? Bitcoin is a great buy right now."},
]

RULES = [
    # relevance: the last reply is judged not relevant, the others relevant
    {"template": "agent/turn_relevance", "contains": "card number again", "content": "It ignores the request.\nANSWER: no"},
    {"template": "agent/turn_relevance", "content": "It answers the user.\nANSWER: yes"},
    # retention: re-asking for the card number forgets what Kim said
    {"template": "agent/turn_retention", "contains": "card number again", "content": "Asks again for 4411.\nANSWER: no"},
    {"template": "agent/turn_retention", "content": "Nothing forgotten.\nANSWER: yes"},
    # role: investment advice breaks the role; the judge answers nothing readable about one turn
    {"template": "agent/turn_role", "contains": "Bitcoin", "content": "Gives investment advice.\nANSWER: no"},
    {"template": "agent/turn_role", "contains": "three wrong PINs. I can", "content": "hmm, hard to say"},
    {"template": "agent/turn_role", "content": "In role.\nANSWER: yes"},
    {"template": "agent/completeness_intentions",
     "content": {"intentions": ["unblock card 4411", "advice on buying bitcoin"]}},
    {"template": "agent/completeness_check", "contains": "unblock card", "content": "Only promised.\nANSWER: no"},
    {"template": "agent/completeness_check", "content": "Answered.\nANSWER: yes"},
    {"template": "agent/goal_outcome", "content": {"user_goal": "unblock card", "end_state": "card still blocked"}},
    {"template": "agent/goal_compare", "content": {"reason": "still blocked", "verdict": "0"}},
    {"content": "no rule for this prompt"},
]


def invoke(app, *args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj=app, catch_exceptions=False)


@pytest.fixture
def judged(app, tmp_path):
    """Run scorers on the conversation with the scripted judge; the exported rows by scorer."""
    rules = write(tmp_path / "rules.yaml", yaml.safe_dump(RULES, sort_keys=False))
    data = write(tmp_path / "chat.jsonl", json.dumps({"id": "kim", "messages": CHAT}) + "\n")

    def run(*scorers, expect=0):
        args = ["run", data, "--judge-model", f"scripted/{rules}", "--json"]
        for scorer in scorers:
            args += ["-s", scorer]
        result = invoke(app, *args)
        assert result.exit_code == expect, result.output
        exported = invoke(app, "runs", "export", json.loads(result.stdout)["run_id"])
        return {r["scorer"]: r for r in map(json.loads, exported.stdout.splitlines())}

    return run


def test_per_turn_verdicts_sit_in_the_details_by_message_index(judged):
    rows = judged("agent/turn_relevance", "agent/knowledge_retention")
    relevance = rows["agent/turn_relevance"]
    assert relevance["error"] is None
    assert relevance["value"] == pytest.approx(2 / 3)
    turns = relevance["details"]["turns"]
    assert [(t["message"], t["verdict"], t["value"]) for t in turns] == [(2, "yes", 1.0), (4, "yes", 1.0),
                                                                         (6, "no", 0.0)]
    assert turns[2]["reason"] == "It ignores the request."
    assert rows["agent/knowledge_retention"]["value"] == pytest.approx(2 / 3)
    assert len(rows["agent/knowledge_retention"]["details"]["turns"]) == 3  # one judgement per assistant reply


def test_an_unreadable_turn_is_the_cases_error_never_a_zero(judged):
    row = judged("agent/role_adherence", expect=1)["agent/role_adherence"]  # 1: every result an error
    assert row["value"] is None
    assert row["error"].startswith("message 4: unreadable answer")
    by_message = {t["message"]: t for t in row["details"]["turns"]}
    assert by_message[6]["verdict"] == "no" and by_message[2]["verdict"] == "yes"
    assert by_message[4]["value"] is None and by_message[4]["error"]


def test_completeness_judges_each_intention(judged):
    row = judged("agent/completeness")["agent/completeness"]
    assert row["value"] == 0.5
    assert [(i["intention"], i["verdict"]) for i in row["details"]["intentions"]] == [
        ("unblock card 4411", "no"), ("advice on buying bitcoin", "yes")]


def test_goal_success_without_a_reference_compares_with_the_inferred_goal(judged):
    row = judged("agent/goal_success")["agent/goal_success"]
    assert (row["value"], row["label"]) == (0.0, "no")
    assert row["details"]["with_reference"] is False
    assert row["details"]["desired_outcome"] == "unblock card"
    assert row["details"]["end_state"] == "card still blocked"


def test_role_adherence_without_a_role_is_a_recorded_error(app, tmp_path):
    rules = write(tmp_path / "rules.yaml", yaml.safe_dump(RULES, sort_keys=False))
    data = write(tmp_path / "c.jsonl", json.dumps({"id": "x", "messages": CHAT[1:3]}) + "\n")
    result = invoke(app, "run", data, "-s", "agent/role_adherence", "--judge-model", f"scripted/{rules}", "--json")
    assert result.exit_code == 1, result.output  # every result an error
    exported = invoke(app, "runs", "export", json.loads(result.stdout)["run_id"])
    row = json.loads(exported.stdout.splitlines()[0])
    assert row["value"] is None and row["error"].startswith("no role to judge against")
    assert json.loads(result.stdout)["usage"] is None or json.loads(result.stdout)["usage"]["calls"] == 0


@pytest.mark.parametrize("scorer", ["agent/goal_success", "agent/turn_relevance", "agent/completeness"])
def test_a_case_without_messages_is_refused_and_nothing_stored(app, tmp_path, isolated_home, scorer):
    rules = write(tmp_path / "rules.yaml", yaml.safe_dump(RULES, sort_keys=False))
    data = write(tmp_path / "c.jsonl", json.dumps({"id": "kim", "messages": CHAT}) + "\n"
                 + json.dumps({"id": "plain", "input": "hi", "candidate": "hello"}) + "\n")
    result = invoke(app, "run", data, "-s", scorer, "--judge-model", f"scripted/{rules}")
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "c.jsonl:2: field 'messages'" in lines[0], result.output
    assert not (isolated_home / "evalyard.db").exists()


def test_the_judges_fingerprint_names_every_step_template(app, tmp_path):
    from evalyard_agent.judged import GoalSuccess

    scorer = GoalSuccess(model="scripted/rules.yaml")
    data = scorer.fingerprint_data()
    assert set(data["steps"]) == {"agent/goal_outcome"}
    assert data["template"] == "agent/goal_compare" and len(data["template_hash"]) == 64


def test_calibrate_a_turn_judge_against_human_labels(app, tmp_path):
    rules = write(tmp_path / "rules.yaml", yaml.safe_dump(RULES, sort_keys=False))
    records = []
    for n in range(8):  # half the conversations end in the irrelevant reply; people label them so
        messages = CHAT if n % 2 else CHAT[:5]
        records.append({"id": f"c{n}", "messages": messages, "metadata": {"human_label": 0 if n % 2 else 1}})
    data = write(tmp_path / "labelled.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    result = invoke(app, "calibrate", data, "--scorer", "agent/turn_relevance", "--judge-model",
                    f"scripted/{rules}", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["compared"] == 8
    assert report["correlation"]["spearman"] == pytest.approx(1.0)
    assert report["card"]["model"] == f"scripted/{rules}"
