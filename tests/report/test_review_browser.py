"""``evalyard review BASE NEW`` in a real headless Chromium: a reviewer judges a blind session with
the keyboard; nothing in the DOM, the page source or any request or response the page makes tells
which run is which (run ids and names, the models, the scorers and their values, the prompt the
runs were generated with); the security probes are refused; Ctrl-C ends the session and prints
the summary that reveals the runs; the same command resumes with the same sides; a second
reviewer joins."""

from __future__ import annotations

import http.client
import json
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from report_helpers import evalyard

pytestmark = pytest.mark.browser

#: The prompt the runs were generated with: its text is not shown to reviewers.
PROMPT = """---
description: the system under test's prompt
fields: [input]
system: SECRET-SYSTEM-PROMPT answer as the quokka would.
---
Q: {{ input }}
"""
CASES = 12
#: Each run's model (a scripted model whose file name is distinctive) and answers: BASE is terse,
#: NEW answers in a sentence; the odd cases' BASE answers are wrong.
MODELS = {"base": "quokka-7b-instruct", "new": "wombat-70b-chat"}


def _answer(run: str, i: int) -> str:
    if run == "base":
        return f"{i + 1}" if i % 2 == 0 else "no idea"
    return f"The answer is {i + 1}."


@pytest.fixture
def reviewed_runs(cli_env, tmp_path):
    data = tmp_path / "questions.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i:02d}", "input": f"What is {i} plus one?", "reference": f"{i + 1}",
                                        "context": [f"Counting passage {i}."]}) + "\n" for i in range(CASES)),
                    encoding="utf-8")
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "secret_prompt.jinja").write_text(PROMPT, encoding="utf-8")
    db = f"sqlite:///{tmp_path / 'review.db'}"
    runs = {}
    for run, model in MODELS.items():
        rules = tmp_path / f"{model}.jsonl"
        rules.write_text("".join(json.dumps({"contains": f"What is {i} plus one?", "content": _answer(run, i)}) + "\n"
                                 for i in range(CASES)), encoding="utf-8")
        done = evalyard("run", str(data), "--model", f"scripted/{rules}", "--prompt", "secret_prompt", "--prompts-dir",
                        str(prompts), "-s", "exact_match", "-s", "word_count_match", "--name", f"{model}-run",
                        "--db", db, "--json", env=cli_env)
        assert done.returncode == 0, done.stderr
        runs[run] = json.loads(done.stdout)["run_id"]
    return db, runs


def _start(cli_env, tmp_path, *args: str):
    """The review server as a user starts it; returns (process, url, session id) once it listens."""
    exe = Path(sys.executable).parent / "evalyard"
    # PYTHONFAULTHANDLER: a server that does not stop can be made to print where each thread is (_stop).
    # SIGINT as a terminal gives it: a shell that starts the test run in the background without job
    # control (`make test &` in a script) has it ignored, and the ignoring would pass to the server,
    # which Ctrl-C could then never stop
    server = subprocess.Popen([str(exe), "review", *args, "--port", "0"], env={**cli_env, "PYTHONFAULTHANDLER": "1"},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    line = server.stdout.readline()  # the server prints its address once it listens
    match = re.search(r"(http://127\.0\.0\.1:\d+/) \(session (rv[0-9a-f]+)", line)
    if not match:
        server.kill()
        raise AssertionError(line + server.stderr.read())
    return server, match.group(1), match.group(2)


def _stop(server, interrupt: bool = False) -> str:
    """Stop a server (Ctrl-C ends the session and prints its summary); returns what it printed after."""
    if server.poll() is None:
        server.send_signal(signal.SIGINT if interrupt else signal.SIGTERM)
    try:
        out, _ = server.communicate(timeout=60)  # a deadline, not a wait
    except subprocess.TimeoutExpired:
        server.send_signal(signal.SIGABRT)  # the fault handler prints every thread's stack, then it dies
        out, err = server.communicate(timeout=30)
        raise AssertionError(f"the review server did not stop within 60 s; it printed {out!r}; its threads:\n"
                             + err[-6000:]) from None
    return out


def _request(url, method, path, body=None, headers=None):
    host, port = url.split("//")[1].rstrip("/").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read().decode("utf-8")
    finally:
        connection.close()


def _traffic(driver) -> list[str]:
    """Every URL, request header and body, and response header and body the page's requests carried
    (Chromium's DevTools network log), as text to search."""
    seen, ids = [], []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        params = message.get("params", {})
        if message["method"] == "Network.requestWillBeSent":
            request = params["request"]
            seen += [request["url"], json.dumps(request.get("headers")), request.get("postData") or ""]
            ids.append(params["requestId"])
        elif message["method"] == "Network.responseReceived":
            seen += [params["response"]["url"], json.dumps(params["response"].get("headers"))]
    for request_id in ids:
        try:
            seen.append(driver.execute_cdp_cmd("Network.getResponseBody", {"requestId": request_id}).get("body", ""))
        except Exception:  # a request without a body to fetch (a redirect, a favicon from data:)
            pass
    return seen


def test_a_blind_review_in_the_browser(reviewed_runs, browser, cli_env, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    db, runs = reviewed_runs
    driver = browser.driver
    driver.execute_cdp_cmd("Network.enable", {})
    server, url, session = _start(cli_env, tmp_path, runs["base"], runs["new"], "--reviewer", "ann", "--size", "6",
                                  "--db", db)
    other = None
    try:
        browser.open(url)

        def body(name: str) -> str | None:
            return driver.find_element("tag name", "body").get_attribute(name)

        def press(key: str, changes: bool = True) -> None:
            before = body("data-case")
            ActionChains(driver).send_keys(key).perform()
            if changes:
                browser.wait(lambda d: body("data-case") != before)

        seen_a = {}
        first = body("data-case")
        assert first and driver.find_element("id", "review-current").text == "not reviewed yet"
        seen_a[first] = driver.find_element("id", "review-a").text
        browser.screenshot("review-page")
        # skip with the right arrow, back with the left
        press(Keys.ARROW_RIGHT)
        press(Keys.ARROW_LEFT)
        assert body("data-case") == first
        # a note: n focuses it, typing there gives no verdict, Esc leaves it, then a verdict key
        ActionChains(driver).send_keys("n").perform()
        browser.wait(lambda d: d.switch_to.active_element.get_attribute("id") == "review-note")
        ActionChains(driver).send_keys("both are terse, a bit better").perform()
        assert body("data-case") == first
        ActionChains(driver).send_keys(Keys.ESCAPE).perform()
        browser.wait(lambda d: d.switch_to.active_element.get_attribute("id") != "review-note")
        press("a")
        verdicts = ["A"]
        for key, verdict in (("b", "B"), ("t", "tie"), ("x", "both_bad")):
            seen_a[body("data-case")] = driver.find_element("id", "review-a").text
            press(key)
            verdicts.append(verdict)
        seen_a[body("data-case")] = driver.find_element("id", "review-a").text
        driver.find_element("id", "review-B").click()  # a button works too
        browser.wait(lambda d: body("data-saved") == "5" and body("data-pending") == "0")
        verdicts.append("B")
        press(Keys.ARROW_LEFT)
        assert driver.find_element("id", "review-current").text == "your verdict: B is better (a new one replaces it)"
        browser.screenshot("review-reviewed")

        # nothing identifies the runs: the DOM, the source, every request and response
        dom = driver.execute_script("return document.documentElement.outerHTML + document.body.innerText")
        texts = [dom, driver.page_source, *_traffic(driver)]
        identifying = [runs["base"], runs["new"], *MODELS.values(), "quokka", "wombat", "-run", "exact_match",
                       "word_count_match", "SECRET-SYSTEM-PROMPT", "secret_prompt", "scripted", "cost", "latency",
                       "duration", "usage", "informative", "scored higher", "stratum"]
        for text in texts:
            for secret in identifying:
                assert secret.lower() not in text.lower(), (secret, text[:300])
        data = driver.execute_script("return document.getElementById('evalyard-data').textContent")
        assert '"value"' not in data and '"base"' not in data and '"new"' not in data and '"score' not in data
        browser.assert_quiet(url)

        # the security probes: refused, and nothing written
        own = url.rstrip("/")
        token = json.loads(data)["token"]
        other, other_url, other_session = _start(cli_env, tmp_path, "--session", session, "--reviewer", "bob",
                                                 "--db", db)
        with socket.socket() as taken:  # a port in use: one line, exit 2, and no session kept
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            done = evalyard("review", runs["base"], runs["new"], "--new-session", "--uniform", "--size", str(CASES),
                            "--port", str(taken.getsockname()[1]), "--db", db, env=cli_env)
        assert done.returncode == 2 and "cannot listen" in done.stderr
        offered = set(json.loads(driver.execute_script(
            "return document.getElementById('evalyard-data').textContent"))["cases"][i]["id"] for i in range(6))
        outside = next(f"q{i:02d}" for i in range(CASES) if f"q{i:02d}" not in offered)
        good = {"Content-Type": "application/json", "Origin": own, "X-Evalyard-Token": token}
        probe = {"case_id": first, "verdict": "B"}
        assert _request(url, "POST", "/review", probe, {**good, "Origin": "http://evil.example"})[0] == 403
        assert _request(url, "POST", "/review", probe, {**good, "X-Evalyard-Token": ""})[0] == 403
        assert _request(url, "POST", "/review", probe, {k: v for k, v in good.items() if k != "X-Evalyard-Token"})[0] == 403
        assert _request(url, "POST", "/review", probe, {**good, "Host": "rebind.example:80",
                                                         "Origin": "http://rebind.example:80"})[0] == 403
        assert _request(url, "GET", "/", headers={"Host": "rebind.example"})[0] == 403
        assert _request(url, "POST", "/review", {**probe, "case_id": outside}, good)[0] == 400
        # bob's token is not ann's: a write to bob's server with ann's token is refused
        bob = other_url.rstrip("/")
        assert _request(other_url, "POST", "/review", probe, {**good, "Origin": bob})[0] == 403
        # and the page's own script without its token (same origin) is refused too
        status = driver.execute_async_script(
            "var done = arguments[1]; fetch('/review', {method: 'POST', headers: {'Content-Type': 'application/json'},"
            " body: JSON.stringify({case_id: arguments[0], verdict: 'B'})}).then(function (r) { done(r.status); });",
            first)
        assert status == 403
    finally:
        if other is not None:
            _stop(other)
        summary = _stop(server, interrupt=True)

    # Ctrl-C ended the session: its summary reveals the runs and says what the verdicts say
    print(summary)
    assert f"BASE {MODELS['base']}-run ({runs['base']})" in summary and "5 reviews by 1 reviewer" in summary
    assert "position bias of ann" in summary and "note by ann on " + first in summary
    report = json.loads(evalyard("review", "--summary", session, "--json", "--db", db, env=cli_env).stdout)
    assert report["win_rate"]["reviews"] == 5 and report["reviewers"] == ["ann"]  # bob wrote nothing

    # the same command resumes: the same sides, the verdicts kept, the first open case first
    browser.reset()
    server, url, resumed = _start(cli_env, tmp_path, runs["base"], runs["new"], "--reviewer", "ann", "--db", db)
    try:
        assert resumed == session
        browser.open(url)
        current = driver.find_element("tag name", "body").get_attribute("data-case")
        assert current not in seen_a  # the sixth case, the one not judged yet
        ActionChains(driver).send_keys(Keys.ARROW_LEFT).perform()
        browser.wait(lambda d: d.find_element("tag name", "body").get_attribute("data-case") != current)
        back = driver.find_element("tag name", "body").get_attribute("data-case")
        assert driver.find_element("id", "review-a").text == seen_a[back]
        assert driver.find_element("id", "review-current").text.startswith("your verdict: ")
        ActionChains(driver).send_keys(Keys.ARROW_RIGHT).perform()
        browser.wait(lambda d: d.find_element("tag name", "body").get_attribute("data-case") == current)
        ActionChains(driver).send_keys("a").perform()
        browser.wait(lambda d: d.find_element("id", "review-done").is_displayed()
                     and d.find_element("tag name", "body").get_attribute("data-pending") == "0")
        browser.screenshot("review-done")
        browser.assert_quiet(url)
    finally:
        _stop(server)
    report = json.loads(evalyard("review", "--summary", session, "--json", "--db", db, env=cli_env).stdout)
    assert report["win_rate"]["reviews"] == 6


def test_ctrl_c_ends_the_session_while_a_browser_keeps_a_connection_open(reviewed_runs, cli_env, tmp_path):
    """Browsers open connections ahead of need (Chromium's preconnect) and leave them idle; Ctrl-C
    must still end the session and print the summary at once, not wait for the browser to let go
    (it used to hang until the tab was closed: closing, the server joined every connection's
    thread, and the one waiting for a request on the idle connection never ended)."""
    db, runs = reviewed_runs
    server, url, _ = _start(cli_env, tmp_path, runs["base"], runs["new"], "--reviewer", "cy", "--size", "3",
                            "--db", db)
    host, port = url.split("//")[1].rstrip("/").split(":")
    try:
        with socket.create_connection((host, int(port)), timeout=10) as idle:  # connected, no request sent
            assert _request(url, "GET", "/")[0] == 200  # the server is serving while the idle one waits
            summary = _stop(server, interrupt=True)
            assert idle.fileno() != -1
    finally:
        if server.poll() is None:  # a failed check leaves no server running
            server.kill()
            server.communicate()
    assert server.returncode == 0 and "review session" in summary and "no verdicts yet" in summary, summary
