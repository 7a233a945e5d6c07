"""The report and the dashboard of a run larger than a page can hold (20,000 cases in a real
SQLite file): a bounded page with every statistic, the worst and failing cases, a sample and
the way to every row; the dashboard pages the run in the database; the page works in Chromium."""

from __future__ import annotations

import re
from html import unescape

import pytest

from evalyard.report import build_report
from evalyard.report.data import FULL_TABLE_MAX_CASES, SAMPLE_CASES, TOP_CASES
from evalyard.report.synthetic import write_bulk_run
from evalyard.store import Store

CASES = 20_000


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    path = tmp_path_factory.mktemp("large") / "large.db"
    store = Store(f"sqlite:///{path}")
    new = write_bulk_run(store, CASES, seed=11)
    base = write_bulk_run(store, CASES, seed=12)
    # the two runs share case ids but not suites (each bulk run makes its own): compare pairs by id
    yield store, new, base
    store.close()


def _naive_worst(store, run_id: str, scorer: str, n: int) -> list[str]:
    scored = sorted((r.value, r.case_id) for r in store.results(run_id, scorer) if r.error is None and r.value is not None)
    return [c for _, c in scored[:n]]


def _embedded_ids(html: str) -> list[str]:
    import json

    data = re.search(r'<script type="application/json" id="evalyard-data">(.*?)</script>', html, re.S).group(1)
    return json.loads(data)["cases"]["id"]


def test_large_report_is_bounded_and_shows_worst_failing_sample_and_the_way_to_every_row(large):
    store, new, _ = large
    assert CASES > FULL_TABLE_MAX_CASES
    html = build_report(store, new)
    assert len(html.encode()) < 1_000_000  # the 1M-case figure is in benchmarks/RESULTS.md
    text = unescape(re.sub(r"<[^>]+>", " ", html))
    assert f"evalyard runs export {new} --format jsonl" in text and "--format parquet" in text
    assert "evalyard serve" in text
    ids = _embedded_ids(html)
    assert SAMPLE_CASES < len(ids) <= SAMPLE_CASES + 4 * TOP_CASES
    for scorer in ("exact_match", "overlap"):
        worst = _naive_worst(store, new, scorer, TOP_CASES)
        section = re.search(rf'data-list="worst" data-scorer="{scorer}">(.*?)</table>', html, re.S).group(1)
        assert re.findall(r'<tr data-case="([^"]+)"', section) == worst
        assert set(worst) <= set(ids)  # the case view can open each of them
    failing = re.search(r'data-list="failing" data-scorer="overlap">(.*?)</table>', html, re.S).group(1)
    assert len(re.findall(r"<tr data-case=", failing)) == TOP_CASES
    assert "case-0000000" in ids and f"case-{CASES - CASES // SAMPLE_CASES:07d}" in ids  # the sample's ends
    # statistics and charts still cover every case
    stats = store.get_run(new).totals["scorers"]["overlap"]
    assert f'data-stat="count">{stats["count"]}<' in html
    assert f'aria-label="histogram of {stats["scored"]} values"' in html


def test_large_compare_is_bounded_and_pairs_every_case(large):
    store, new, base = large
    html = build_report(store, new, compare_ref=base)
    assert len(html.encode()) < 1_000_000
    from evalyard.figures.comparisons import compare_runs

    expected = compare_runs(store, base, new, top=10)["scorers"]["overlap"]
    row = re.search(r'<tr data-scorer="overlap".*?</tr>', html, re.S).group(0)
    assert f'{expected["mean_delta"]:+.3f}' in row
    assert f'{expected["wins"]} / {expected["losses"]} / {expected["ties"]}' in re.sub(r"<[^>]+>", "", row)
    worst = [w["case_id"] for w in expected["worst_cases"]]
    shown = re.findall(r'class="side-by-side" data-case="([^"]+)"', html)
    assert worst and set(worst) <= set(shown) and set(shown) <= set(_embedded_ids(html))


def test_dashboard_pages_a_large_run_in_the_database(large):
    pytest.importorskip("flask")
    from evalyard.report.serve import create_app

    store, new, _ = large
    client = create_app(store).test_client()
    first = client.get(f"/runs/{new}")
    assert first.status_code == 200
    second = client.get(f"/runs/{new}?page=1&size=50").get_data(as_text=True)
    assert _embedded_ids(second) == [f"case-{i:07d}" for i in range(50, 100)]
    assert 'id="page-next"' in second and 'id="page-prev"' in second
    failing = client.get(f"/runs/{new}?scorer=overlap&failing=1&page=2").get_data(as_text=True)
    ids = _embedded_ids(failing)
    bad = {r.case_id for r in store.results(new, "overlap") if r.error is not None or r.passed is False}
    assert len(ids) == 50 and set(ids) <= bad
    assert client.get(f"/runs/{new}?page=-1").status_code == 400
    assert client.get(f"/runs/{new}?scorer=nope").status_code == 400
    report = client.get(f"/runs/{new}/report").get_data(as_text=True)
    assert 'id="worst-cases"' in report


@pytest.mark.browser
def test_large_report_opens_in_chromium(large, browser, tmp_path):
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    store, new, _ = large
    path = tmp_path / "large.html"
    path.write_text(build_report(store, new), encoding="utf-8")
    browser.open(path.as_uri())
    assert "runs export" in browser.driver.find_element("id", "large-run-note").text
    worst = _naive_worst(store, new, "overlap", 1)[0]
    browser.driver.find_element("css selector", f'[data-list=worst][data-scorer=overlap] tr[data-case="{worst}"] a').click()
    view = WebDriverWait(browser.driver, 10).until(EC.visibility_of_element_located(("id", "case-view")))
    assert worst in view.text
    browser.assert_quiet(path.as_uri())


def test_a_live_large_run_reports_sql_statistics(tmp_path):
    from evalyard.analysis.stats import summarize

    store = Store(f"sqlite:///{tmp_path / 'live.db'}")
    run_id = write_bulk_run(store, 400, status="running")
    html = build_report(store, run_id, large_above=100)  # the bounded page, at a size a test builds quickly
    expected = summarize(store.outcomes(run_id, "overlap"))
    card = re.search(r'<article class="card" data-scorer="overlap">.*?</article>', html, re.S).group(0)
    assert f'data-stat="count">{expected["count"]}<' in card and f'{expected["mean"]:.3f}' in card
    assert 'data-stat="ci95"' in card  # the interval of the results stored so far
    assert 'id="large-run-note"' in html
    store.close()
