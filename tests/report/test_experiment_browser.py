"""An experiment in the dashboard, in a real headless Chromium: the experiments list, the grid
(cells x scorers, coloured by the difference to the baseline, interval and stability on hover,
median latency), a case's epochs side by side across the cells, and a cell's run page with the
epochs in its case detail. The grid is made through the real CLI and model layer (scripted models
behind litellm); the dashboard is ``evalyard serve``'s WSGI app on a real socket."""

from __future__ import annotations

import json
import threading

import pytest
from click.testing import CliRunner

from evalyard.cli import cli

pytestmark = pytest.mark.browser

QUESTIONS = {f"q{i}": (f"What is {i} plus {i}?", str(2 * i)) for i in range(4)}


@pytest.fixture
def grid(app, rules, tmp_path):
    """Two cells x 2 epochs: a model right every time, and one right on a question's first call
    only (its epochs disagree on every case)."""
    suite = tmp_path / "sums.jsonl"
    suite.write_text("".join(json.dumps({"id": c, "input": q, "reference": a}) + "\n" for c, (q, a) in QUESTIONS.items()))
    right = rules([{"contains": q, "content": f"It is {a}."} for q, a in QUESTIONS.values()], name="right")
    flaky = rules([rule for q, a in QUESTIONS.values()
                   for rule in ({"contains": q, "content": f"It is {a}.", "times": 1},
                                {"contains": q, "content": "Maybe later."})], name="flaky")
    result = CliRunner().invoke(cli, ["run", str(suite), "-s", "contains", "-m", right, "-m", flaky, "--epochs", "2",
                                      "--name", "browser-grid", "--json"], obj=app, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def dashboard(app, grid):
    from evalyard.report.serve import make_server

    server = make_server(app.open_store(), port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        thread.join(timeout=10)


def _script(browser, code: str):
    return browser.driver.execute_script(code)


def test_the_dashboard_shows_an_experiments_grid_and_a_cases_epochs(browser, dashboard, grid):
    from selenium.webdriver.support import expected_conditions as EC

    from evalyard.models.usage import format_latency

    origin = dashboard
    browser.open(origin + "experiments")
    browser.click_through(f"#experiments-table tr[data-experiment='{grid['experiment_id']}'] a")

    # the grid: one row per cell; the flaky cell is half as good as the baseline, shaded so
    cells = grid["comparison"]["cells"]
    assert _script(browser, "return document.querySelectorAll('#experiment-grid tr[data-cell]').length") == 2
    shaded = browser.driver.find_element("css selector", "#experiment-grid tr[data-cell='1'] td.shade")
    assert "down3" in shaded.get_attribute("class")
    hover = shaded.get_attribute("title")
    assert "difference to the baseline -0.5000, 95% CI [" in hover and "the verdict changed on 4 of 4 cases" in hover
    stability = browser.driver.find_element("css selector", "#experiment-grid tr[data-cell='1'] [data-stability=contains]")
    assert stability.text == "changed 100% · sd 0.707"
    latency = browser.driver.find_element("css selector", "#experiment-grid tr[data-cell='0'] [data-stat=latency]").text
    assert latency == format_latency(cells[0]["latency"]["median_ms"]) and cells[0]["latency"]["calls"] == 2 * len(QUESTIONS)

    # the case view: open a case, read each cell's epochs side by side
    browser.driver.find_element("css selector", "#case-q2 > summary").click()
    browser.wait(EC.visibility_of_element_located(("css selector", "#case-q2 tr.epoch[data-output-cell='1'][data-epoch='1']")))
    rows = _script(browser, "return Array.from(document.querySelectorAll('#case-q2 tr.epoch'), "
                            "tr => [tr.dataset.outputCell, tr.dataset.epoch, tr.innerText])")
    assert [(cell, epoch) for cell, epoch, _ in rows] == [("0", "0"), ("0", "1"), ("1", "0"), ("1", "1")]
    # which epoch got the flaky model's first (right) answer is up to the order the calls ran in
    flaky_epochs = [text for cell, _, text in rows if cell == "1"]
    assert [t for t in flaky_epochs if "It is 4." in t][0].endswith("pass")
    assert [t for t in flaky_epochs if "Maybe later." in t][0].endswith("fail")
    browser.screenshot("dashboard-experiment")

    # a cell's run: its report shows the stability and, in a case's detail, the case's epochs
    browser.click_through("#experiment-grid tr[data-cell='1'] a")
    assert browser.driver.find_element("css selector", "article.card[data-scorer=contains] [data-stat=unstable]").text == "4 of 4"
    browser.driver.find_element("css selector", "#case-body tr[data-case='q2']").click()
    browser.wait(EC.visibility_of_element_located(("css selector", "#cv-epochs tr[data-epoch='1']")))
    epochs = _script(browser, "return Array.from(document.querySelectorAll('#cv-epochs tr[data-epoch]'), tr => tr.innerText)")
    assert len(epochs) == 2 and sum("It is 4." in e for e in epochs) == 1 and sum("Maybe later." in e for e in epochs) == 1
    browser.screenshot("dashboard-experiment-run-epochs")
    browser.assert_quiet(origin)
