"""The report and the dashboard in a real headless Chromium: numbers as stored, filters, the
case view, the compare view; no console errors and no request beyond the page itself."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from report_helpers import evalyard

from evalyard.figures.comparisons import compare_runs

pytestmark = pytest.mark.browser


def _select(browser, element_id: str, value: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(browser.driver.find_element("id", element_id)).select_by_value(value)


def _rows(browser) -> list[str]:
    # read in one script call: the table may be re-rendered between finding a row and reading it
    return browser.driver.execute_script(
        "return Array.from(document.querySelectorAll('#case-body tr'), tr => tr.getAttribute('data-case'))")


def _text(browser, css: str) -> str:
    return browser.driver.find_element("css selector", css).text


def _write_report(runs, tmp_path: Path, run: str, *extra: str) -> Path:
    path = tmp_path / f"report-{run}.html"
    done = evalyard("report", run, "--db", runs.db, "-o", str(path), *extra, env=runs.env)
    assert done.returncode == 0, done.stderr
    return path


def _failing_cases(store, run_id: str) -> tuple[set[str], set[str]]:
    failed, errored = set(), set()
    for row in store.results(run_id):
        if row.error is not None:
            errored.add(row.case_id)
        elif row.passed is False:
            failed.add(row.case_id)
    return failed | errored, errored


def test_report_shows_the_run_as_stored(runs, store, browser, tmp_path):
    path = _write_report(runs, tmp_path, runs.new)
    browser.open(path.as_uri())
    run = store.get_run(runs.new)
    assert _text(browser, "[data-field=run-id]") == run.id
    assert _text(browser, "[data-field=cases]") == "20"
    assert _text(browser, "[data-field=suite]").startswith("quickstart")
    assert _text(browser, "[data-field=cost]") == "none (no model calls)"  # quickstart calls no model
    for name, stats in run.totals["scorers"].items():
        card = f"article.card[data-scorer={name}]"
        assert _text(browser, f"{card} [data-stat=mean]") == f"{stats['mean']:.3f}"
        assert _text(browser, f"{card} [data-stat=count]") == str(stats["count"])
        if stats["pass_rate"] is not None:
            assert _text(browser, f"{card} [data-stat=pass_rate]") == f"{100 * stats['pass_rate']:.1f}% pass"
        assert browser.driver.find_elements("css selector", f"{card} svg.chart rect.bar")
    # the table holds every case, failing ones first
    _select(browser, "f-size", "100")
    rows = _rows(browser)
    failing, _ = _failing_cases(store, run.id)
    assert sorted(rows) == sorted(c.id for c in store.run_cases(run))
    assert set(rows[:len(failing)]) == failing
    browser.screenshot("report-overview")
    browser.assert_quiet(path.as_uri())


def test_filters_failed_errors_label_and_search(runs, store, browser, tmp_path):
    from selenium.webdriver.common.keys import Keys

    path = _write_report(runs, tmp_path, runs.new)
    browser.open(path.as_uri())
    failing, errored = _failing_cases(store, runs.new)
    _select(browser, "f-status", "failed")
    assert set(_rows(browser)) == failing
    assert all("fail" in tr.get_attribute("innerHTML") or "error" in tr.get_attribute("innerHTML")
               for tr in browser.driver.find_elements("css selector", "#case-body tr"))
    browser.driver.find_element("id", "case-table").location_once_scrolled_into_view
    browser.screenshot("report-failed-filter")
    _select(browser, "f-status", "errors")
    assert set(_rows(browser)) == errored
    _select(browser, "f-status", "all")
    matched = {r.case_id for r in store.results(runs.new, "exact_match") if r.label == "match"}
    _select(browser, "f-label", "exact_match=match")
    assert set(_rows(browser)) == matched and matched
    _select(browser, "f-label", "")
    search = browser.driver.find_element("id", "f-search")
    search.send_keys("capital")
    # the search box filters once typing pauses: wait for the table to show it
    browser.wait(lambda d: set(_rows(browser)) == {"capital-fr", "capital-au"})
    search.send_keys(Keys.CONTROL, "a")
    search.send_keys(Keys.BACKSPACE)
    browser.wait(lambda d: len(_rows(browser)) == 20)
    # sorting by a scorer: ascending values, unscored cases last
    browser.driver.find_element("css selector", "#case-head th[data-key=readability]").click()
    browser.wait(lambda d: d.find_elements("css selector", "#case-head th.sorted-asc[data-key=readability]"))
    _select(browser, "f-size", "100")
    values = [float(td.text) for td in browser.driver.find_elements("css selector", "#case-body tr td:nth-child(4)")]
    assert values == sorted(values) and len(values) == 20
    browser.assert_quiet(path.as_uri())


def test_case_view_shows_inputs_and_scorer_details(runs, store, browser, tmp_path):
    path = _write_report(runs, tmp_path, runs.new)
    browser.open(path.as_uri())
    browser.driver.find_element("css selector", "#case-body tr[data-case=capital-fr]").click()
    view = browser.driver.find_element("id", "case-view")
    assert view.is_displayed()
    text = view.text
    case = next(c for c in store.run_cases(store.get_run(runs.new)) if c.id == "capital-fr")
    assert case.input in text and case.context[0] in text
    bert = next(r for r in store.results(runs.new, "bertscore") if r.case_id == "capital-fr")
    block = view.find_element("css selector", ".score-block[data-scorer=bertscore]").text
    assert "precision" in block and f"{bert.details['precision']:.3f}" in block
    hedging = view.find_element("css selector", ".score-block[data-scorer=hedging_language]").text
    assert "phrase" in hedging
    browser.screenshot("report-case-view")
    browser.driver.find_element("id", "cv-close").click()
    assert not view.is_displayed()
    browser.assert_quiet(path.as_uri())


def test_case_view_renders_sandbox_traceback(runs, store, browser, tmp_path):
    path = _write_report(runs, tmp_path, runs.coding)
    browser.open(path.as_uri() + "#case=parse-crash")  # a deep link opens the case
    block = browser.driver.find_element("css selector", "#case-view .score-block[data-scorer=python_unit_testing]")
    row = next(r for r in store.results(runs.coding) if r.case_id == "parse-crash")
    assert "traceback" in block.text.lower() and row.details["traceback"][-1] in block.text
    assert block.find_element("css selector", "pre.code")
    browser.screenshot("report-case-view-sandbox")
    browser.assert_quiet(path.as_uri())


def test_case_view_shows_the_answer_as_written_beside_what_the_scorer_read(runs, browser, tmp_path):
    import json

    data = tmp_path / "fenced.jsonl"
    answer = "Here you are:\n```python\ndef add(a, b):\n    return a + b\n```\nIt adds."
    data.write_text(json.dumps({"id": "fenced", "input": "Write add(a, b).", "candidate": answer,
                                "metadata": {"unit_tests": "assert add(1, 2) == 3"}}) + "\n")
    db = f"sqlite:///{tmp_path / 'extracted.db'}"
    done = evalyard("run", str(data), "-s", "python_unit_testing", "--extract", "code", "--json", "--db", db,
                    env=runs.env)
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    path = tmp_path / "extracted.html"
    assert evalyard("report", run_id, "--db", db, "-o", str(path), env=runs.env).returncode == 0
    browser.open(path.as_uri() + "#case=fenced")
    written, read = browser.driver.find_elements("css selector", "#case-view .two-col.extracted > *")
    assert "candidate as written" in written.text.lower() and "```python" in written.text and "It adds." in written.text
    assert "as python_unit_testing read it" in read.text.lower() and "def add(a, b):" in read.text
    assert "```" not in read.text and "It adds." not in read.text
    block = browser.driver.find_element("css selector", "#case-view .score-block[data-scorer=python_unit_testing]")
    assert "pass" in block.text.lower()
    browser.screenshot("report-case-view-extracted")
    browser.assert_quiet(path.as_uri())


def test_compare_view(runs, store, browser, tmp_path):
    path = _write_report(runs, tmp_path, runs.new, "--compare", runs.base)
    browser.open(path.as_uri())
    expected = compare_runs(store, runs.base, runs.new, top=10)
    for name, s in expected["scorers"].items():
        row = f"#compare-table tr[data-scorer={name}]"
        assert _text(browser, f"{row} [data-stat=mean_delta]") == f"{s['mean_delta']:+.3f}"
        assert _text(browser, f"{row} [data-stat=wlt]") == f"{s['wins']} / {s['losses']} / {s['ties']}"
    warning = _text(browser, "#fingerprint-warning")
    assert "exact_match" in warning and "word_count_match" not in warning
    # a changed candidate is among the most regressed cases, both answers side by side
    worst = browser.driver.find_elements("css selector", ".side-by-side[data-case=capital-au]")
    assert worst and "Canberra" in worst[0].text and "Sydney" in worst[0].text
    browser.screenshot("report-compare")
    _select(browser, "f-status", "regressed")
    assert set(_rows(browser)) >= {"capital-au"}
    browser.driver.find_element("css selector", "#case-body tr[data-case=capital-au]").click()
    assert "candidate (base)" in _text(browser, "#case-view").lower()
    browser.assert_quiet(path.as_uri())


def test_large_report_filters_without_freezing(browser, tmp_path):
    from selenium.webdriver.support import expected_conditions as EC

    from evalyard.report import build_report
    from evalyard.report.synthetic import write_synthetic_run
    from evalyard.store import Store

    store = Store(f"sqlite:///{tmp_path / 'large.db'}")
    run_id = write_synthetic_run(store, 10_000)
    path = tmp_path / "large.html"
    html = build_report(store, run_id)
    assert 'data-encoding="gzip-base64"' in html and len(html) < 4 * 2**20  # packed: a quarter of the plain size
    path.write_text(html, encoding="utf-8")
    store.close()
    started = time.perf_counter()
    browser.open(path.as_uri())
    assert time.perf_counter() - started < 20
    # one filter change runs synchronously in the change handler: time it in the page
    elapsed_ms = browser.driver.execute_script("""
        var s = document.getElementById('f-status'); s.value = 'errors';
        var t = performance.now(); s.dispatchEvent(new Event('change')); return performance.now() - t;""")
    assert elapsed_ms < 1000
    assert "of 10000" in _text(browser, "#p-info") or "from 10000" in _text(browser, "#p-info")
    assert len(_rows(browser)) == 50  # one page in the DOM, not ten thousand rows
    # the case view reads each family's details: reasoning, checklist answers, claims and verdicts
    browser.driver.execute_script("location.hash = '#case=case-00003'")  # hashchange is dispatched later
    judge = browser.wait(EC.visibility_of_element_located(
        ("css selector", "#case-view .score-block[data-scorer=judge_helpfulness]")))
    assert "reasoning" in judge.text.lower()
    assert [th.text for th in judge.find_elements("css selector", "table.items th")] == ["#", "question", "answer", "confidence"]
    claims = browser.driver.find_element("css selector", "#case-view .score-block[data-scorer=faithfulness] table.items")
    assert "verdict" in claims.text and claims.find_elements("css selector", ".verdict-good, .verdict-bad")
    browser.screenshot("report-case-view-judge")
    browser.driver.find_element("id", "cv-close").click()
    browser.driver.execute_script("document.getElementById('f-search').value='case-0999';"
                                  "document.getElementById('f-search').dispatchEvent(new Event('input'));")
    _select(browser, "f-status", "all")
    browser.wait(lambda d: set(_rows(browser)) == {f"case-0999{d}" for d in range(10)})
    browser.assert_quiet(path.as_uri())


# -- the dashboard ----------------------------------------------------------------------------------

def _listening_addresses(port: int) -> set[str]:
    """Local addresses with a listening TCP socket on ``port``, from the kernel's own table."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if int(hex_port, 16) == port and state == "0A":  # 0A: LISTEN
                found.add(socket.inet_ntop(socket.AF_INET, bytes.fromhex(address)[::-1]) if len(address) == 8 else address)
    return found


@pytest.fixture
def dashboard(runs, tmp_path):
    exe = Path(sys.executable).parent / "evalyard"
    server = subprocess.Popen([str(exe), "serve", "--db", runs.db, "--port", "0"], env=runs.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        line = server.stdout.readline()
        match = re.search(r"http://([\d.]+):(\d+)/", line)
        assert match, line + server.stderr.read()
        yield match.group(1), int(match.group(2))
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_dashboard_lists_runs_shows_a_run_and_compares_two(runs, store, browser, dashboard):
    from selenium.webdriver.support import expected_conditions as EC

    host, port = dashboard
    assert host == "127.0.0.1" and _listening_addresses(port) == {"127.0.0.1"}
    origin = f"http://127.0.0.1:{port}/"
    browser.open(origin)
    listed = {tr.get_attribute("data-run") for tr in browser.driver.find_elements("css selector", "#runs-table tbody tr")}
    assert listed == {runs.new, runs.base, runs.coding}
    browser.screenshot("dashboard-runs")
    browser.click_through(f"#runs-table tr[data-run='{runs.new}'] a")
    stats = store.get_run(runs.new).totals["scorers"]["readability"]
    assert _text(browser, "article.card[data-scorer=readability] [data-stat=mean]") == f"{stats['mean']:.3f}"
    _select(browser, "f-status", "failed")
    assert set(_rows(browser)) == _failing_cases(store, runs.new)[0]
    browser.driver.find_element("css selector", "#case-body tr").click()
    browser.wait(EC.visibility_of_element_located(("id", "case-view")))
    browser.screenshot("dashboard-run")
    browser.open(origin)
    _select(browser, "compare-base", runs.base)
    _select(browser, "compare-new", runs.new)
    browser.click_through("#compare-go")
    assert "exact_match" in _text(browser, "#fingerprint-warning")
    assert browser.driver.find_elements("css selector", "#compare-table tr[data-scorer=word_count_match]")
    browser.screenshot("dashboard-compare")
    browser.assert_quiet(origin)
