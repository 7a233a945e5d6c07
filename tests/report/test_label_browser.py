"""``evalyard label`` in a real headless Chromium: a person labels ten cases with the keyboard
(and the buttons), the labels land in the database, and ``evalyard calibrate --run`` uses them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from report_helpers import evalyard

pytestmark = pytest.mark.browser

#: The scripted judge's value per case (threshold 0.5), and what the "person" answers: the
#: truth differs from the judge on every case whose id ends in 3 or 7.
VALUES = [round(0.05 + 0.9 * i / 29, 3) for i in range(30)]


def _truth(case_id: str, value: float) -> str:
    judge = "yes" if value >= 0.5 else "no"
    flipped = case_id[-1] in "37"
    return {"yes": "no", "no": "yes"}[judge] if flipped else judge


@pytest.fixture
def labelled_run(cli_env, tmp_path):
    data = tmp_path / "answers.jsonl"
    data.write_text("".join(json.dumps({"id": f"a{i:02d}", "input": f"question {i}", "candidate": f"answer {i}",
                                        "reference": f"gold {i}", "context": [f"passage {i}"],
                                        "metadata": {"script": v}}) + "\n"
                            for i, v in enumerate(VALUES)), encoding="utf-8")
    db = f"sqlite:///{tmp_path / 'label.db'}"
    done = evalyard("run", str(data), "--scorer", "scripted", "--db", db, "--json", env=cli_env)
    assert done.returncode == 0, done.stderr
    return db, json.loads(done.stdout)["run_id"]


@pytest.fixture
def label_page(labelled_run, cli_env, tmp_path):
    db, run_id = labelled_run
    exe = Path(sys.executable).parent / "evalyard"
    server = subprocess.Popen([str(exe), "label", run_id, "--db", db, "--port", "0", "--size", "10",
                               "--labeller", "tester"], env=cli_env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        line = server.stdout.readline()  # the server prints its address once it listens
        match = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
        assert match, line + server.stderr.read()
        yield match.group(1), db, run_id, server
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_label_ten_cases_in_the_browser_then_calibrate_on_them(label_page, browser, cli_env):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    url, db, run_id, _ = label_page
    driver = browser.driver
    browser.open(url)
    by_id = {f"a{i:02d}": v for i, v in enumerate(VALUES)}

    def current() -> str:
        return driver.find_element("tag name", "body").get_attribute("data-case")

    def verdict_shown() -> bool:
        return driver.find_element("id", "label-verdict-box").is_displayed()

    def press(key: str, after: str | None = None) -> None:
        ActionChains(driver).send_keys(key).perform()
        if after is not None:
            browser.wait(lambda d: current() != after)

    assert "passage" in driver.find_element("id", "label-context").text
    # the verdict is hidden until the case is labelled; v shows it, v again hides it
    assert not verdict_shown()
    press("v")
    browser.wait(lambda d: verdict_shown())
    assert "value" in driver.find_element("id", "label-verdict").text
    press("v")
    browser.wait(lambda d: not verdict_shown())
    # skip one with s, and come back to it with the left arrow
    first = current()
    press("s", after=first)
    press(Keys.ARROW_LEFT, after=current())
    assert current() == first

    labelled = []
    for n in range(10):
        case_id = current()
        assert case_id and case_id not in labelled
        answer = _truth(case_id, by_id[case_id])
        if n == 4:  # one with the button instead of the key
            driver.find_element("id", f"label-{answer}").click()
            browser.wait(lambda d: current() != case_id)
        else:
            press(answer[0], after=case_id)
        labelled.append(case_id)
    browser.wait(lambda d: d.find_element("tag name", "body").get_attribute("data-saved") == "10"
                 and d.find_element("tag name", "body").get_attribute("data-pending") == "0")
    assert driver.find_element("id", "label-done").is_displayed()
    assert "10 labelled this session" in driver.find_element("id", "label-progress").text
    # going back to a labelled case shows the judge's verdict
    press(Keys.ARROW_LEFT)
    browser.wait(lambda d: current() == labelled[-1] and verdict_shown())
    answer = _truth(labelled[-1], by_id[labelled[-1]])
    assert driver.find_element("id", "label-current").text == f"labelled {answer} by tester (a new label replaces it)"
    browser.screenshot("label-page")
    browser.assert_quiet(url)

    # the sample drew from every bin of the judge's value: cases on both sides of the threshold
    assert {by_id[c] >= 0.5 for c in labelled} == {True, False}
    done = evalyard("calibrate", "--run", run_id, "--db", db, "--json", "--no-baselines", env=cli_env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["compared"] == 10 and report["data"] == f"labels of run {run_id}"
    expected = sum(_truth(c, by_id[c]) == ("yes" if by_id[c] >= 0.5 else "no") for c in labelled) / 10
    assert report["labels"]["accuracy"] == pytest.approx(expected)
    assert sorted(d["id"] for d in report["disagreements"]) == sorted(c for c in labelled if c[-1] in "37")
    text = evalyard("calibrate", "--run", run_id, "--db", db, "--no-baselines", env=cli_env).stdout
    print(f"labelled {labelled}\n{text}")  # what a person sees (pytest -s shows it)
    assert f"scripted vs metadata.human_label (run {run_id}): 10 cases, 10 compared" in text


def test_a_label_the_server_did_not_store_is_not_lost_silently(label_page, browser):
    """The server stopped: the label fails, the page says so and goes back to that case."""
    from selenium.webdriver.common.action_chains import ActionChains

    url, _, _, server = label_page
    browser.open(url)
    body = browser.driver.find_element("tag name", "body")
    first = body.get_attribute("data-case")
    server.terminate()
    server.wait(timeout=10)
    ActionChains(browser.driver).send_keys("y").perform()
    browser.wait(lambda d: d.find_element("id", "label-status").text.startswith("not saved:"))
    assert body.get_attribute("data-case") == first and body.get_attribute("data-saved") is None
