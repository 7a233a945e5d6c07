"""A case's images and audio on every page, in a real headless Chromium: the report's case view, the
grid's case view, the labelling page and the blind review page show the image (decoded: its
naturalWidth), open it full size on a click or a key and close it with Escape, and give the audio a
player that loads; the static report embeds media up to its budget and links the rest from files
beside it, never from the network; the served pages' media route refuses a request without the
session's cookie, from another origin, or for a medium not on the page.

The grid is two vision models of the fake OpenAI server (over HTTP through litellm), made by the real
CLI; the pages are written by the real CLI or served by it in a subprocess."""

from __future__ import annotations

import hashlib
import http.client
import io
import json
import math
import os
import re
import struct
import subprocess
import sys
import wave
from pathlib import Path

import pytest
from click.testing import CliRunner

from report_helpers import evalyard

pytestmark = pytest.mark.browser


def png(colour: tuple[int, int, int], size=(96, 64)) -> bytes:
    """An image with something to see: a colour, and a white bar across it."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", size, colour)
    ImageDraw.Draw(image).rectangle((8, size[1] // 2 - 6, size[0] - 8, size[1] // 2 + 6), fill=(255, 255, 255))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def wav(seconds: float = 0.5, rate: int = 8000) -> bytes:
    """Half a second of a 440 Hz tone."""
    out = io.BytesIO()
    with wave.open(out, "wb") as clip:
        clip.setnchannels(1)
        clip.setsampwidth(2)
        clip.setframerate(rate)
        clip.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * n / rate)))
                                  for n in range(int(seconds * rate))))
    return out.getvalue()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


IMAGE = png((40, 110, 200))
CLIP = wav()
OTHER = png((200, 60, 30), size=(50, 40))  # a medium of another suite: on none of the pages below


@pytest.fixture
def media_app(isolated_home, installed_plugins):
    import evalyard

    return evalyard.Application(evalyard.Settings.from_env({**os.environ, "FAKE_KEY": "sk-fake"}))


@pytest.fixture
def fake_vision():
    from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig

    server = FakeOpenAIServer(FakeServerConfig(reply="a blue chart")).start()
    yield server
    server.stop()


@pytest.fixture
def media_grid(media_app, fake_vision, tmp_path):
    """A grid of two vision models over three cases: an image in the input, an audio clip in a
    conversation's message, and plain text; and, in the same database, another suite's image."""
    (tmp_path / "chart.png").write_bytes(IMAGE)
    (tmp_path / "clip.wav").write_bytes(CLIP)
    (tmp_path / "other.png").write_bytes(OTHER)
    cases = [{"id": "photo", "input": [{"type": "text", "text": "What colour is the chart?"},
                                       {"type": "image_url", "image_url": {"url": "chart.png"}}], "reference": "blue"},
             {"id": "clip", "messages": [{"role": "user", "content": [
                 {"type": "text", "text": "Transcribe this."},
                 {"type": "input_audio", "input_audio": {"data": "clip.wav", "format": "wav"}}]}],
              "reference": "a tone"},
             {"id": "plain", "input": "Name a colour.", "reference": "blue"}]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    lines = ["name: media-views", "data: cases.jsonl", "models:"]
    for model in ("openai/vision-a", "openai/vision-b"):
        lines += [f"  {model}:", f"    api_base: {fake_vision.base_url}", "    api_key_env: FAKE_KEY",
                  "    supports_vision: true", "    supports_audio_input: true"]
    (tmp_path / "suite.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = f"sqlite:///{tmp_path / 'media.db'}"
    result = CliRunner().invoke(_cli(), [
        "run", str(tmp_path / "suite.yaml"), "-m", "openai/vision-a", "-m", "openai/vision-b", "-s", "contains",
        "--name", "media-grid", "--db", db, "--json"], obj=media_app, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    grid = json.loads(result.stdout)
    (tmp_path / "other.jsonl").write_text(json.dumps({
        "id": "elsewhere", "input": [{"type": "text", "text": "And this?"},
                                     {"type": "image_url", "image_url": {"url": "other.png"}}],
        "candidate": "red", "reference": "red"}) + "\n", encoding="utf-8")
    other = CliRunner().invoke(_cli(), ["run", str(tmp_path / "other.jsonl"), "-s", "contains", "--db", db],
                               obj=media_app, catch_exceptions=False)
    assert other.exit_code == 0, other.output
    return db, grid


def _cli():
    from evalyard.cli import cli

    return cli


def _runs(grid) -> list[str]:
    return [cell["run_id"] for cell in grid["comparison"]["cells"]]


def _invoke(app, *args: str) -> str:
    result = CliRunner().invoke(_cli(), list(args), obj=app, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


# -- what the browser sees ---------------------------------------------------------------------------

def _image_decoded(browser, scope: str) -> int:
    """The naturalWidth of the first thumbnail in ``scope``, once it has decoded (0 never passes)."""
    return browser.wait(lambda d: d.execute_script(
        "var img = document.querySelector(arguments[0] + ' button.media-thumb img');"
        "return img && img.complete && img.naturalWidth;", scope))


def _opens_full_size_and_escape_closes(browser, scope: str, still_open: str | None = None) -> None:
    """A click on the thumbnail opens the image full size; Escape closes it (and only it); then
    the thumbnail opens it again from the keyboard (Enter on the focused button)."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    driver = browser.driver
    thumb = driver.find_element("css selector", f"{scope} button.media-thumb")
    thumb.click()
    full = browser.wait(lambda d: d.execute_script(
        "var v = document.querySelector('.media-viewer');"
        "var img = v && !v.hidden && v.querySelector('img.media-full');"
        "return img && img.complete && [img.naturalWidth, img.getBoundingClientRect().width];"))
    assert full[0] == 96 and full[1] == 96  # the image at its own size, not the thumbnail's
    ActionChains(driver).send_keys(Keys.ESCAPE).perform()
    browser.wait(lambda d: d.execute_script("return document.querySelector('.media-viewer').hidden"))
    if still_open:  # Escape closed the image, not the view under it
        assert driver.find_element("css selector", still_open).is_displayed()
    assert driver.switch_to.active_element == thumb  # focus back where it was
    ActionChains(driver).send_keys(Keys.ENTER).perform()
    browser.wait(lambda d: d.execute_script("return !document.querySelector('.media-viewer').hidden"))
    ActionChains(driver).send_keys(Keys.ESCAPE).perform()
    browser.wait(lambda d: d.execute_script("return document.querySelector('.media-viewer').hidden"))


def _audio_plays(browser, scope: str) -> float:
    """The duration of the first player in ``scope`` once its metadata loaded (no error)."""
    return browser.wait(lambda d: d.execute_script(
        "var a = document.querySelector(arguments[0] + ' figure.media-audio audio');"
        "if (a && a.error) throw new Error('audio error ' + a.error.code);"
        "return a && a.readyState >= 1 && a.duration;", scope))


# -- the static pages ----------------------------------------------------------------------------------

def test_report_case_view_shows_the_image_and_plays_the_audio(media_app, media_grid, browser, tmp_path):
    db, grid = media_grid
    page = tmp_path / "report.html"
    _invoke(media_app, "report", _runs(grid)[0], "-o", str(page), "--db", db)
    html = page.read_text(encoding="utf-8")
    assert "img-src data:; media-src data:; form-action" in html  # all embedded: nothing else allowed
    assert not (tmp_path / "report_media").exists()

    browser.open(page.as_uri() + "#case=photo")
    assert _image_decoded(browser, "#cv-body") == 96
    assert "What colour is the chart?" in browser.driver.find_element("id", "cv-body").text
    browser.screenshot("media-case-view")
    _opens_full_size_and_escape_closes(browser, "#cv-body", still_open="#case-view .dialog")
    browser.driver.execute_script("location.hash = '#case=clip'")
    browser.wait(lambda d: d.find_element("id", "cv-title").text == "Case clip")
    assert _audio_plays(browser, "#cv-conversation") == pytest.approx(0.5, abs=0.01)
    assert "Transcribe this." in browser.driver.find_element("id", "cv-conversation").text
    urls = browser.assert_quiet(page.as_uri().split("#")[0])
    assert all(u.startswith("data:") or u.startswith(page.as_uri().split("#")[0]) for u in urls)


def test_the_budget_links_media_from_files_beside_the_report(media_app, media_grid, browser, tmp_path):
    from evalyard.report import build_report, static_page_media

    db, grid = media_grid
    store = media_app.open_store(db)
    page = tmp_path / "small.html"
    # a budget the image fits and the clip does not: the image embedded, the clip a file beside
    page.write_text(build_report(store, _runs(grid)[0], media=static_page_media(store, page, budget=len(IMAGE))),
                    encoding="utf-8")
    folder = tmp_path / "small_media"
    assert sorted(p.name for p in folder.iterdir()) == [sha(CLIP) + ".wav"]
    assert (folder / (sha(CLIP) + ".wav")).read_bytes() == CLIP
    html = page.read_text(encoding="utf-8")
    assert "img-src data: 'self'; media-src data: 'self';" in html
    assert f'"src":"small_media/{sha(CLIP)}.wav","linked":true' in html

    browser.open(page.as_uri() + "#case=clip")
    assert _audio_plays(browser, "#cv-conversation") == pytest.approx(0.5, abs=0.01)
    assert "linked, not embedded: a file beside this page" in browser.driver.find_element("id", "cv-conversation").text
    browser.driver.execute_script("location.hash = '#case=photo'")
    assert _image_decoded(browser, "#cv-body") == 96
    assert "linked" not in browser.driver.find_element("id", "cv-body").text
    urls = browser.assert_quiet(tmp_path.as_uri() + "/")  # the page, and the file beside it
    assert (folder / (sha(CLIP) + ".wav")).as_uri() in urls

    # under budget: nothing beside the page, every source a data URI; written again, nothing rewritten
    roomy = tmp_path / "roomy.html"
    roomy.write_text(build_report(store, _runs(grid)[0], media=static_page_media(store, roomy)), encoding="utf-8")
    text = roomy.read_text(encoding="utf-8")
    sources = json.loads(re.search(r'id="evalyard-media">(.*?)</script>', text).group(1))
    assert set(sources) == {sha(IMAGE), sha(CLIP)} and all(s["src"].startswith("data:") for s in sources.values())
    assert not (tmp_path / "roomy_media").exists() and "_media/" not in text
    before = (folder / (sha(CLIP) + ".wav")).stat().st_mtime_ns
    build_report(store, _runs(grid)[0], media=static_page_media(store, page, budget=len(IMAGE)))
    assert (folder / (sha(CLIP) + ".wav")).stat().st_mtime_ns == before
    # a run without media: no media element, and the policy as it always was
    (tmp_path / "plain.jsonl").write_text(json.dumps({"id": "p", "input": "hi", "candidate": "hi", "reference": "hi"}) + "\n",
                                          encoding="utf-8")
    plain_run = json.loads(_invoke(media_app, "run", str(tmp_path / "plain.jsonl"), "-s", "contains", "--db", db, "--json"))
    plain = build_report(store, plain_run["run_id"])
    store.close()
    assert 'id="evalyard-media"' not in plain and "img-src data:; form-action 'self'" in plain


def test_grid_case_view_shows_the_image(media_app, media_grid, browser, tmp_path):
    db, grid = media_grid
    page = tmp_path / "grid.html"
    _invoke(media_app, "experiments", "report", grid["experiment_id"], "-o", str(page), "--db", db)
    browser.open(page.as_uri())
    browser.driver.execute_script("document.getElementById('case-photo').open = true")
    assert _image_decoded(browser, "#case-photo") == 96
    _opens_full_size_and_escape_closes(browser, "#case-photo", still_open="#case-photo .case-input")
    browser.screenshot("media-grid-case-view")
    browser.assert_quiet(page.as_uri())


# -- the served pages ----------------------------------------------------------------------------------

def _serve(cli_env, cwd, *args: str, pattern: str) -> tuple[subprocess.Popen, re.Match]:
    exe = Path(sys.executable).parent / "evalyard"
    server = subprocess.Popen([str(exe), *args, "--port", "0"], env=cli_env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=cwd)
    line = server.stdout.readline()  # the server prints its address once it listens
    match = re.search(pattern, line)
    if not match:
        server.kill()
        raise AssertionError(line + server.stderr.read())
    return server, match


def _get(url: str, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    host, port = url.split("//")[1].rstrip("/").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def _route_refusals(browser, url: str) -> None:
    """The media route: the page's own cookie gets the bytes with their type; no cookie, a wrong
    one, another origin, or a medium of no case on the page is refused."""
    token = json.loads(browser.driver.execute_script("return document.getElementById('evalyard-data').textContent"))["token"]
    # cookies are kept per host, not per port: this page's is the one named after its session's token
    (cookie,) = [c for c in browser.driver.get_cookies()
                 if c["name"] == "evalyard-" + hashlib.sha256(token.encode()).hexdigest()[:16]]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    own = {"Cookie": f"{cookie['name']}={cookie['value']}"}
    status, headers, body = _get(url, f"/media/{sha(IMAGE)}", own)
    assert status == 200 and body == IMAGE and headers["Content-Type"] == "image/png"
    assert headers["X-Content-Type-Options"] == "nosniff"
    status, headers, body = _get(url, f"/media/{sha(CLIP)}", own)
    assert status == 200 and body == CLIP and headers["Content-Type"] == "audio/wav"
    assert _get(url, f"/media/{sha(IMAGE)}", {})[0] == 403  # no token
    assert _get(url, f"/media/{sha(IMAGE)}", {"Cookie": f"{cookie['name']}=forged"})[0] == 403
    assert _get(url, f"/media/{sha(IMAGE)}", {**own, "Origin": "http://evil.example"})[0] == 403
    assert _get(url, f"/media/{sha(IMAGE)}", {**own, "Sec-Fetch-Site": "cross-site"})[0] == 403
    assert _get(url, f"/media/{sha(IMAGE)}", {**own, "Host": "rebind.example"})[0] == 403
    assert _get(url, f"/media/{sha(OTHER)}", own)[0] == 404  # stored, but of no case on this page
    assert _get(url, "/media/" + "0" * 64, own)[0] == 404


def _page_policy(url: str) -> str:
    return _get(url, "/", {})[1]["Content-Security-Policy"]


def test_labelling_page_shows_the_image_and_plays_the_audio(media_grid, browser, cli_env, tmp_path):
    db, grid = media_grid
    server, match = _serve(cli_env, tmp_path, "label", _runs(grid)[0], "--db", db, "--size", "3",
                           "--labeller", "tester", pattern=r"(http://127\.0\.0\.1:\d+/)")
    url = match.group(1)
    try:
        assert "img-src data: 'self'; media-src 'self';" in _page_policy(url)
        browser.open(url)
        driver = browser.driver
        for _ in range(3):  # the cases come in the page's order: find each one
            case = driver.find_element("tag name", "body").get_attribute("data-case")
            if case == "photo":
                assert _image_decoded(browser, "#label-input-parts") == 96
                _opens_full_size_and_escape_closes(browser, "#label-input-parts", still_open="#label-case")
            elif case == "clip":
                assert _audio_plays(browser, "#label-conversation") == pytest.approx(0.5, abs=0.01)
            driver.find_element("id", "label-skip").click()
            browser.wait(lambda d: d.find_element("tag name", "body").get_attribute("data-case") != case)
        _route_refusals(browser, url)
        browser.assert_quiet(url)
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_review_page_shows_the_media_and_nothing_that_tells_the_runs_apart(media_grid, browser, cli_env, tmp_path):
    db, grid = media_grid
    base, new = _runs(grid)
    server, match = _serve(cli_env, tmp_path, "review", base, new, "--reviewer", "ann", "--size", "3", "--uniform",
                           "--db", db, pattern=r"(http://127\.0\.0\.1:\d+/) \(session (rv[0-9a-f]+)")
    url = match.group(1)
    try:
        browser.driver.execute_cdp_cmd("Network.enable", {})
        browser.open(url)
        driver = browser.driver
        seen = set()
        for _ in range(3):
            case = driver.find_element("tag name", "body").get_attribute("data-case")
            seen.add(case)
            if case == "photo":
                assert _image_decoded(browser, "#review-input-parts") == 96
                _opens_full_size_and_escape_closes(browser, "#review-input-parts", still_open="#review-case")
                browser.screenshot("media-review-page")
            elif case == "clip":
                assert _audio_plays(browser, "#review-conversation") == pytest.approx(0.5, abs=0.01)
            driver.find_element("id", "review-skip").click()
            browser.wait(lambda d: d.find_element("tag name", "body").get_attribute("data-case") != case)
        assert seen == {"photo", "clip", "plain"}
        # the media's URLs name their hash and nothing else; nothing on the page names a run or model
        sources = driver.execute_script("return Array.from(document.querySelectorAll('img, audio'), e => e.src)")
        assert sources and all(re.fullmatch(re.escape(url) + r"media/[0-9a-f]{64}", s) for s in sources), sources
        text = driver.page_source + driver.execute_script("return document.body.innerText")
        for secret in (base, new, "vision-a", "vision-b", "media-grid", "contains"):
            assert secret not in text, secret
        _route_refusals(browser, url)
        browser.assert_quiet(url)
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_dashboard_serves_its_pages_media_by_hash(media_app, media_grid):
    from evalyard.report.serve import create_app

    db, grid = media_grid
    store = media_app.open_store(db)
    try:
        client = create_app(store).test_client()
        page = client.get(f"/runs/{_runs(grid)[0]}").get_data(as_text=True)
        assert f'"src":"/media/{sha(IMAGE)}"' in page and "img-src data: 'self'; media-src data: 'self';" in page
        answer = client.get(f"/media/{sha(CLIP)}")
        assert answer.status_code == 200 and answer.data == CLIP and answer.content_type == "audio/wav"
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
        assert client.get("/media/" + "0" * 64).status_code == 404
    finally:
        store.close()
