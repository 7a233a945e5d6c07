"""A retrieval run's report in a real headless Chromium: a case's ranked passages in trec_eval's
order with the relevant ones marked, per-passage verdicts, a long passage collapsed, and the
"retrieval at k" chart with one point per cutoff; no console errors, no request beyond the page."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from evalyard.cli import cli
from evalyard.report import build_report

pytestmark = pytest.mark.browser

LONG = ("Canberra was chosen as the capital in 1908 as a compromise between Sydney and Melbourne. " * 8).strip()
#: Listed out of rank order, with a tie (a-2 and a-9 both 0.6: ids descending, so a-9 first).
RETRIEVED = [{"id": "a-2", "text": "Sydney has the opera house and the harbour bridge.", "score": 0.6},
             {"id": "a-5", "text": "Melbourne was the seat of government until 1927.", "score": 0.3},
             {"id": "a-1", "text": LONG, "score": 0.9},
             {"id": "a-9", "text": "Canberra is the capital of Australia.", "score": 0.6}]
RELEVANT = {"a-9": 2, "a-1": 1, "a-5": 0, "a-7": 1}
ORDER = ["a-1", "a-9", "a-2", "a-5"]


@pytest.fixture
def report(app, tmp_path):
    cases = [{"id": "capital", "input": "What is the capital of Australia?", "retrieved": RETRIEVED,
              "relevant": RELEVANT, "reference_contexts": ["Canberra is the capital of Australia."]},
             {"id": "other", "input": "Which city is largest?", "relevant": ["x"],
              "retrieved": [{"id": "x", "text": "Sydney.", "score": 1.0}, {"id": "y", "text": "Perth.", "score": 0.5}],
              "reference_contexts": ["Sydney."]}]
    suite = tmp_path / "capitals.jsonl"
    suite.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    result = CliRunner().invoke(cli, ["run", str(suite), "-s", "recall@1", "-s", "recall@2", "-s", "recall@3",
                                      "-s", "recall@10", "-s", "non_llm_context_precision", "--json"],
                                obj=app, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    path = tmp_path / "retrieval.html"
    path.write_text(build_report(app.open_store(), json.loads(result.stdout)["run_id"]), encoding="utf-8")
    return path


def test_case_view_marks_relevant_passages_in_rank_order(browser, report):
    browser.open(report.as_uri())
    # the run page: recall at four cutoffs, one point each, k in order
    ks = browser.driver.execute_script(
        "return Array.from(document.querySelectorAll('#retrieval-at-k svg[data-measure=recall] g.point'),"
        " g => g.getAttribute('data-k'))")
    assert ks == ["1", "2", "3", "10"]

    browser.driver.find_element("css selector", "#case-body tr[data-case=capital]").click()
    browser.wait(lambda d: d.find_elements("css selector", "#cv-passages li.passage"))
    passages = browser.driver.execute_script(
        "return Array.from(document.querySelectorAll('#cv-passages li.passage'), li => ({id: li.dataset.id,"
        " rank: li.dataset.rank, relevant: li.classList.contains('relevant'), grade: li.dataset.grade || null,"
        " verdict: (li.querySelector('.passage-verdict[data-scorer=non_llm_context_precision]') || {}).innerText}))")
    assert [p["id"] for p in passages] == ORDER and [p["rank"] for p in passages] == ["1", "2", "3", "4"]
    assert [p["relevant"] for p in passages] == [True, True, False, False]
    assert [p["grade"] for p in passages] == ["1", "2", None, "0"]
    # only the passage that is the reference passage matches it (Ragas' string similarity)
    assert [p["verdict"].split()[-1] for p in passages] == ["0", "1", "0", "0"]
    assert browser.driver.find_element("id", "cv-missed").text == "relevant, not retrieved: a-7"
    # the long passage is collapsed to its start until opened
    long_text = browser.driver.find_element("css selector", "#cv-passages li[data-id=a-1] details.passage-text")
    assert long_text.get_attribute("open") is None
    assert not long_text.find_element("css selector", "pre.text").is_displayed()
    browser.screenshot("report-retrieval-case")
    browser.assert_quiet(report.as_uri())
