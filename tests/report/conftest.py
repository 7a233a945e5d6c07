"""Fixtures for the report tests: real runs made by the real CLI, and a real headless browser.

The quickstart runs are made once per session (the embedding scorers load a model), in a
database of their own; each test still gets its own EVALYARD_HOME from the root conftest.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from report_helpers import evalyard
from testutil import ROOT

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
#: Screenshots go to a temporary folder unless EVALYARD_SCREENSHOTS names one (`make screenshots`
#: refreshes docs/screenshots/ that way), so an ordinary test run leaves the tree as it was.
SCREENSHOTS = os.environ.get("EVALYARD_SCREENSHOTS")
#: Flags for a root user on a machine without a display, and nothing that phones home.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1320,1000")
#: Cases of the quickstart suite whose candidates the base run answers differently.
BASE_CANDIDATES = {"capital-au": "Canberra", "author-pp": "Jane Austen"}


@pytest.fixture(autouse=True)
def _installed_plugins(installed_plugins):
    """Reports are made of runs with the installed plugins, as users make them."""


@dataclass
class Runs:
    db: str
    env: dict[str, str]
    new: str        # examples/quickstart.yaml as it stands, every scorer
    base: str       # the same suite, some candidates changed, lexicon scorers, exact_match reconfigured
    coding: str     # examples/coding.yaml (sandbox details: output, traceback)


@pytest.fixture(scope="session")
def runs(tmp_path_factory) -> Runs:
    work = tmp_path_factory.mktemp("report-runs")
    env = dict(os.environ, EVALYARD_HOME=str(work / "home"))
    env.pop("EVALYARD_DB", None)
    env.pop("EVALYARD_LOAD_PLUGINS", None)
    db = f"sqlite:///{work / 'runs.db'}"

    lines = []
    for line in (ROOT / "examples" / "quickstart.jsonl").read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        case["candidate"] = BASE_CANDIDATES.get(case["id"], case["candidate"])
        lines.append(json.dumps(case))
    (work / "quickstart.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    shutil.copy(ROOT / "examples" / "quickstart.yaml", work / "quickstart.yaml")

    def run(*args: str) -> str:
        done = evalyard("run", *args, "--json", "--db", db, env=env)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["run_id"]

    base = run(str(work / "quickstart.yaml"), "--name", "quickstart-base",
               "--scorer", "exact_match:normalize_whitespace=true,case_sensitive=false",
               "--scorer", "word_count_match", "--scorer", "readability", "--scorer", "specificity")
    new = run("examples/quickstart.yaml", "--name", "quickstart-new")
    coding = run("examples/coding.yaml", "--name", "coding")
    return Runs(db=db, env=env, new=new, base=base, coding=coding)


@pytest.fixture(scope="session")
def store(runs):
    from evalyard.store import Store

    opened = Store(runs.db)
    yield opened
    opened.close()


def _browser_unavailable() -> str | None:
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            return f"{path} is not installed (make test installs Debian's chromium and chromium-driver as root)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "the selenium package is not installed (pip install -e '.[test]')"
    return None


class Browser:
    """A headless Chromium whose console and network activity a test can read back."""

    def __init__(self, screenshots: Path) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        self.profile = tempfile.mkdtemp(prefix="evalyard-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in CHROMIUM_FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={self.profile}")
        options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.driver.set_page_load_timeout(60)
        self.screenshots = screenshots
        self.console: list[dict] = []
        self.urls: list[str] = []

    def open(self, url: str) -> None:
        """Load a page and wait until its script has built the case table (large pages
        unpack their data asynchronously)."""
        self.driver.get(url)
        self.wait_ready()

    def wait(self, condition, timeout: float = 30):
        """Wait until ``condition(driver)`` is truthy (an explicit wait: no sleeping on a guess)."""
        from selenium.webdriver.support.ui import WebDriverWait

        return WebDriverWait(self.driver, timeout).until(condition)

    def wait_ready(self) -> None:
        """Wait until the current page's script has built its case table (pages without data
        are ready once loaded)."""
        self.wait(lambda d: d.execute_script(
            "return document.readyState === 'complete' && (!document.getElementById('evalyard-data')"
            " || document.body.hasAttribute('data-ready'))"))

    def click_through(self, css: str) -> None:
        """Click what navigates to another page, then wait for the old page to be gone and the
        new one to be ready: finding an element of the new page before that races the load."""
        from selenium.webdriver.support import expected_conditions as EC

        old = self.driver.find_element("css selector", "html")
        self.driver.find_element("css selector", css).click()
        self.wait(EC.staleness_of(old))
        self.wait_ready()

    def reset(self) -> None:
        """Forget what earlier tests logged."""
        self.driver.get("about:blank")
        self._collect()
        self.console, self.urls = [], []

    def _collect(self) -> None:
        self.console += self.driver.get_log("browser")
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message["method"] == "Network.requestWillBeSent":
                self.urls.append(message["params"]["request"]["url"])

    def assert_quiet(self, allowed_prefix: str) -> list[str]:
        """No console errors, and every request since the test began went to ``allowed_prefix``
        (the page itself)."""
        self._collect()
        console, urls = self.console, self.urls
        errors = [e for e in console if e["level"] in ("SEVERE", "ERROR")]
        assert not errors, errors
        outside = [u for u in urls if not (u.startswith(allowed_prefix) or u.startswith("data:"))]
        assert not outside, outside
        return urls

    def screenshot(self, name: str) -> Path:
        self.screenshots.mkdir(parents=True, exist_ok=True)
        path = self.screenshots / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    def close(self) -> None:
        self.driver.quit()
        shutil.rmtree(self.profile, ignore_errors=True)


@pytest.fixture(scope="session")
def chromium(tmp_path_factory):
    reason = _browser_unavailable()
    if reason:
        print(f"\nbrowser tests skipped: {reason}")
        pytest.skip(reason)
    opened = Browser(Path(SCREENSHOTS).resolve() if SCREENSHOTS else tmp_path_factory.mktemp("screenshots"))
    yield opened
    opened.close()


@pytest.fixture
def browser(chromium):
    chromium.reset()
    return chromium
