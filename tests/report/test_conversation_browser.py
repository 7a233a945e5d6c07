"""A conversation case in a real headless Chromium: the report's case view, the dashboard's and
the labelling page show its turns (role, text), the assistant's tool calls (name, JSON arguments)
and the tool results, with each judge's per-turn verdicts beside the message it judged. The run is
made by the real CLI with the agent plugin's judges asking the scripted model."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from report_helpers import evalyard

pytestmark = pytest.mark.browser

CHAT = [
    {"role": "system", "content": "You are Ada, the support agent of a bank. Never give investment advice."},
    {"role": "user", "content": "My name is Kim and my card 4411 is blocked."},
    {"role": "assistant", "content": "Sorry to hear that, Kim. Let me look at card 4411.",
     "tool_calls": [{"id": "c1", "type": "function",
                     "function": {"name": "card_status", "arguments": "{\"card\": \"4411\", \"checks\": [\"pin\"]}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "blocked: three wrong PINs"},
    {"role": "assistant", "content": "It was blocked after three wrong PINs. I can unblock it now."},
    {"role": "user", "content": "Yes please. Also, should I buy bitcoin?"},
    {"role": "assistant", "content": "What was your card number again? Bitcoin is a great buy right now."},
]

RULES = [
    {"template": "agent/turn_relevance", "contains": "card number again",
     "content": "It asks for the card number again instead of unblocking the card.\nANSWER: no"},
    {"template": "agent/turn_relevance", "content": "It answers the user's request.\nANSWER: yes"},
    {"template": "agent/turn_role", "contains": "Bitcoin", "content": "Investment advice is outside the role.\nANSWER: no"},
    {"template": "agent/turn_role", "content": "In role.\nANSWER: yes"},
    {"template": "agent/goal_outcome", "content": {"user_goal": "unblock card 4411", "end_state": "the card is still blocked"}},
    {"template": "agent/goal_compare", "content": {"reason": "the card was never unblocked", "verdict": "0"}},
]


@pytest.fixture
def conversation_run(cli_env, tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump(RULES, sort_keys=False), encoding="utf-8")
    data = tmp_path / "support.jsonl"
    data.write_text(json.dumps({"id": "kim-card", "messages": CHAT,
                                "expected_tool_calls": [{"name": "card_status", "arguments": {"card": "4411"}},
                                                        {"name": "unblock_card", "arguments": {"card": "4411"}}]})
                    + "\n", encoding="utf-8")
    db = f"sqlite:///{tmp_path / 'conversation.db'}"
    done = evalyard("run", str(data), "-s", "agent/turn_relevance", "-s", "agent/role_adherence",
                    "-s", "agent/goal_success", "-s", "agent/tool_calls:mode=superset,arguments=subset",
                    "--judge-model", f"scripted/{rules}", "--db", db, "--json", env=cli_env)
    assert done.returncode in (0, 1), done.stderr  # 1: some case failed a threshold
    return db, json.loads(done.stdout)["run_id"]


def check_conversation(browser, root_css: str, with_verdicts: bool = True) -> None:
    """The turns under ``root_css`` as CHAT holds them, and the verdicts beside them."""
    from selenium.webdriver.support import expected_conditions as EC

    browser.wait(EC.visibility_of_element_located(("css selector", f"{root_css} ol.conversation")))
    driver = browser.driver
    turns = driver.find_elements("css selector", f"{root_css} ol.conversation > li.turn")
    assert [t.get_attribute("data-role") for t in turns] == [m["role"] for m in CHAT]
    assert [int(t.get_attribute("data-message")) for t in turns] == list(range(len(CHAT)))
    assert "Never give investment advice" in turns[0].text
    call = turns[2].find_element("css selector", ".tool-call[data-tool=card_status]")
    assert "calls card_status" in call.text
    arguments = json.loads(call.find_element("css selector", ".tool-call-arguments").text)
    assert arguments == {"card": "4411", "checks": ["pin"]}
    assert turns[3].find_element("css selector", ".tool-result-name").text == "card_status"
    assert "three wrong PINs" in turns[3].text
    if not with_verdicts:
        assert not driver.find_elements("css selector", f"{root_css} .turn-verdict")
        return
    beside = {int(t.get_attribute("data-message")): {v.get_attribute("data-scorer"): v.text
                                                     for v in t.find_elements("css selector", ".turn-verdict")}
              for t in turns}
    # every assistant reply has its two judges' verdicts beside it, and no other message has any
    assert {n for n, v in beside.items() if v} == {2, 4, 6}
    assert set(beside[6]) == {"agent/turn_relevance", "agent/role_adherence"}
    assert "no" in beside[6]["agent/turn_relevance"] and "asks for the card number again" in beside[6]["agent/turn_relevance"]
    assert "Investment advice is outside the role" in beside[6]["agent/role_adherence"]
    said = {(int(t.get_attribute("data-message")), v.get_attribute("data-scorer")):
            v.find_element("css selector", ".turn-verdict-value").text
            for t in turns for v in t.find_elements("css selector", ".turn-verdict")}
    assert said == {(2, "agent/turn_relevance"): "yes", (4, "agent/turn_relevance"): "yes",
                    (6, "agent/turn_relevance"): "no", (2, "agent/role_adherence"): "yes",
                    (4, "agent/role_adherence"): "yes", (6, "agent/role_adherence"): "no"}


def test_report_case_view_shows_the_turns_with_verdicts_beside_them(conversation_run, browser, cli_env, tmp_path):
    db, run_id = conversation_run
    path = tmp_path / "report.html"
    done = evalyard("report", run_id, "--db", db, "-o", str(path), env=cli_env)
    assert done.returncode == 0, done.stderr
    browser.open(path.as_uri())
    browser.driver.find_element("css selector", "#case-body tr[data-case=kim-card]").click()
    check_conversation(browser, "#cv-conversation")
    goal = browser.driver.find_element("css selector", ".score-block[data-scorer='agent/goal_success']").text
    assert "the card was never unblocked" in goal
    browser.screenshot("report-conversation")
    browser.assert_quiet(path.as_uri())


@pytest.fixture
def server_of(cli_env, tmp_path):
    started = []

    def start(*args: str) -> str:
        exe = Path(sys.executable).parent / "evalyard"
        server = subprocess.Popen([str(exe), *args, "--port", "0"], env=cli_env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, cwd=tmp_path)
        started.append(server)
        line = server.stdout.readline()  # the server prints its address once it listens
        match = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
        assert match, line + server.stderr.read()
        return match.group(1)

    yield start
    for server in started:
        server.terminate()
        server.wait(timeout=10)


def test_dashboard_case_view_shows_the_conversation(conversation_run, browser, server_of):
    db, run_id = conversation_run
    origin = server_of("serve", "--db", db)
    browser.open(origin)
    browser.click_through(f"#runs-table tr[data-run='{run_id}'] a")
    browser.driver.find_element("css selector", "#case-body tr[data-case=kim-card]").click()
    check_conversation(browser, "#cv-conversation")
    browser.assert_quiet(origin)


def test_the_labelling_page_shows_the_conversation_to_label(conversation_run, browser, server_of):
    from selenium.webdriver.common.action_chains import ActionChains

    db, run_id = conversation_run
    origin = server_of("label", run_id, "--db", db, "-s", "agent/goal_success", "--labeller", "tester")
    browser.open(origin)
    assert browser.driver.find_element("tag name", "body").get_attribute("data-case") == "kim-card"
    check_conversation(browser, "#label-conversation", with_verdicts=False)
    assert not browser.driver.find_element("id", "label-candidate-box").is_displayed()  # a conversation has none
    ActionChains(browser.driver).send_keys("n").perform()
    browser.wait(lambda d: d.find_element("tag name", "body").get_attribute("data-saved") == "1")
    assert "case kim-card labelled no" in browser.driver.find_element("id", "label-status").text
    browser.assert_quiet(origin)
