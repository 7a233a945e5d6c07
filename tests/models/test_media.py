"""Images and audio in cases, end to end: read from files and data URIs beside the data, stored once
by hash, sent to the model under test (single runs and grids) through litellm to the fake OpenAI
server, which must receive the exact bytes (the sha256 of what it decodes is the file's); refused
before any call when the model or a judge would not see them."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import sqlite3
import wave

import pytest
from click.testing import CliRunner
from testutil import error_lines, write

import evalyard
from evalyard.cli import cli


def png(colour=(200, 10, 10), size=(4, 3)) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, "PNG")
    return out.getvalue()


def wav(frames: int = 800) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as clip:
        clip.setnchannels(1)
        clip.setsampwidth(2)
        clip.setframerate(8000)
        clip.writeframes(b"\x01\x00" * frames)
    return out.getvalue()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def app(isolated_home):
    return evalyard.Application(evalyard.Settings.from_env({**os.environ, "FAKE_KEY": "sk-fake"}))


def invoke(app, *args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj=app)


def media_suite(tmp_path, server, records, *, models=("openai/vision",), vision=True, audio=True):
    """A suite over ``records`` (JSONL beside it) whose models point at the fake server."""
    data = write(tmp_path / "cases.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    lines = ["name: media", f"data: {data.name}", "models:"]
    for model in models:
        lines += [f"  {model}:", f"    api_base: {server.base_url}", "    api_key_env: FAKE_KEY"]
        if vision:
            lines.append("    supports_vision: true")
        if audio:
            lines.append("    supports_audio_input: true")
    return data, write(tmp_path / "suite.yaml", "\n".join(lines) + "\n")


def sent_media(body) -> list[tuple[str, str]]:
    """(kind, sha256 of the decoded bytes) of each media part a request body holds."""
    found = []
    for message in body["messages"]:
        content = message.get("content")
        for part in content if isinstance(content, list) else ():
            if part["type"] == "image_url":
                url = part["image_url"]["url"]
                assert url.startswith("data:image/png;base64,") or url.startswith("data:image/jpeg;base64,"), url[:40]
                found.append(("image", sha(base64.b64decode(url.split(",", 1)[1]))))
            elif part["type"] == "input_audio":
                found.append(("audio", sha(base64.b64decode(part["input_audio"]["data"]))))
    return found


def test_the_model_under_test_receives_the_exact_bytes_and_the_store_keeps_them_once(app, tmp_path, fake_server):
    image, clip = png(), wav()
    write_bytes(tmp_path / "photo.png", image)
    write_bytes(tmp_path / "clip.wav", clip)
    jpeg_uri = "data:image/png;base64," + base64.b64encode(png((10, 200, 10))).decode()
    server = fake_server(reply="red", record=True)
    records = [
        {"id": "file", "input": [{"type": "text", "text": "What colour?"},
                                 {"type": "image_url", "image_url": {"url": "photo.png", "detail": "low"}}],
         "reference": "red"},
        {"id": "uri", "input": [{"type": "text", "text": "And this one?"},
                                {"type": "image_url", "image_url": {"url": jpeg_uri}}], "reference": "green"},
        {"id": "speech", "messages": [{"role": "user", "content": [
            {"type": "text", "text": "Transcribe."}, {"type": "input_audio",
                                                       "input_audio": {"data": "clip.wav", "format": "wav"}}]}],
         "reference": "hello"},
        {"id": "again", "input": [{"type": "text", "text": "Same photo?"},
                                  {"type": "image_url", "image_url": {"url": "photo.png"}}], "reference": "red"},
    ]
    _, suite = media_suite(tmp_path, server, records)
    db = tmp_path / "runs.db"
    result = invoke(app, "run", suite, "-m", "openai/vision", "-s", "contains", "--db", f"sqlite:///{db}", "--json")
    assert result.exit_code in (0, 1), result.output
    assert server.stats.requests == 4
    received = sorted(kind_hash for body in server.stats.bodies for kind_hash in sent_media(body))
    assert received == sorted([("image", sha(image)), ("image", sha(image)), ("audio", sha(clip)),
                               ("image", sha(base64.b64decode(jpeg_uri.split(",", 1)[1])))])
    with sqlite3.connect(db) as connection:
        stored = connection.execute("SELECT sha256, size, media_type FROM media ORDER BY size").fetchall()
        requests = [row[0] for row in connection.execute("SELECT request FROM model_calls")]
        dialogue = connection.execute("SELECT dialogue FROM cases WHERE case_id = 'file'").fetchone()[0]
    assert sorted(s for s, _, _ in stored) == sorted({sha(image), sha(clip), sha(base64.b64decode(jpeg_uri[22:]))})
    # the cache keeps the request with the hash, never the bytes' base64
    assert all("media:sha256:" in r and base64.b64encode(image).decode() not in r for r in requests)
    part = json.loads(dialogue)["input_parts"][1]
    assert part["media"]["sha256"] == sha(image) and part["media"]["path"] == "photo.png"
    # the same run again: every answer from the cache (keys by hash), no media bytes added
    again = invoke(app, "run", suite, "-m", "openai/vision", "-s", "contains", "--db", f"sqlite:///{db}", "--json")
    assert again.exit_code in (0, 1), again.output
    assert server.stats.requests == 4 and json.loads(again.stdout)["usage"]["cache_hits"] == 4
    with sqlite3.connect(db) as connection:
        assert connection.execute("SELECT count(*), sum(size) FROM media").fetchone() == (3, sum(s for _, s, _ in stored))


def write_bytes(path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_a_grid_of_two_vision_models_sends_each_the_bytes(app, tmp_path, fake_server):
    image = png((1, 2, 3))
    write_bytes(tmp_path / "chart.png", image)
    server = fake_server(reply="a chart", record=True)
    _, suite = media_suite(tmp_path, server, [
        {"id": "c", "input": [{"type": "image_url", "image_url": {"url": "chart.png"}},
                              {"type": "text", "text": "What is this?"}], "reference": "chart"}],
        models=("openai/vision-a", "openai/vision-b"))
    result = invoke(app, "run", suite, "-m", "openai/vision-a", "-m", "openai/vision-b", "-s", "contains")
    assert result.exit_code in (0, 1), result.output
    assert sorted(b["model"] for b in server.stats.bodies) == ["vision-a", "vision-b"]
    assert all(sent_media(b) == [("image", sha(image))] for b in server.stats.bodies)


def test_a_model_that_cannot_take_images_is_refused_before_any_call(app, tmp_path, fake_server):
    write_bytes(tmp_path / "photo.png", png())
    server = fake_server(reply="red", record=True)
    data, suite = media_suite(tmp_path, server, [
        {"id": "plain", "input": "hello", "reference": "x"},
        {"id": "photo", "input": [{"type": "text", "text": "Colour?"},
                                  {"type": "image_url", "image_url": {"url": "photo.png"}}], "reference": "red"}],
        vision=False)
    db = tmp_path / "runs.db"
    result = invoke(app, "run", suite, "-m", "openai/vision", "-s", "contains", "--db", f"sqlite:///{db}")
    assert result.exit_code == 2, result.output
    (line,) = error_lines(result.output)
    assert line.startswith(f"Error: {data}:2: field 'input[1]': the model under test 'openai/vision' cannot take "
                           "images, and case 'photo' holds an image"), line
    assert server.stats.requests == 0 and not db.exists()


JUDGE = """---
description: Is the answer right?
fields: [input, candidate, reference]
answer: binary
scorer:
  name: looks_right
---
Question: {{ input }}
Answer: {{ candidate }}
Reference: {{ reference }}
Is the answer right? Answer yes or no.
"""


def test_a_judge_that_would_see_a_text_stand_in_is_refused_before_any_call(app, tmp_path, fake_server):
    write_bytes(tmp_path / "photo.png", png())
    write(tmp_path / "prompts" / "looks_right.jinja", JUDGE)
    server = fake_server(reply="ANSWER: yes", record=True)
    data, suite = media_suite(tmp_path, server, [
        {"id": "photo", "input": [{"type": "text", "text": "Colour?"},
                                  {"type": "image_url", "image_url": {"url": "photo.png"}}],
         "candidate": "red", "reference": "red"}])
    db = tmp_path / "runs.db"
    result = invoke(app, "run", suite, "-s", "looks_right", "--prompts-dir", tmp_path / "prompts",
                    "--judge-model", "openai/vision", "--db", f"sqlite:///{db}")
    assert result.exit_code == 2, result.output
    (line,) = error_lines(result.output)
    assert line.startswith(f"Error: {data}:1: field 'input[1]': scorer 'looks_right' would show its model "
                           "'openai/vision' a text stand-in of case 'photo'"), line
    assert server.stats.requests == 0 and not db.exists()


def test_a_prompt_template_generator_is_refused_on_media(app, tmp_path, fake_server):
    write_bytes(tmp_path / "photo.png", png())
    write(tmp_path / "prompts" / "ask.jinja", "---\nfields: [input]\n---\nAnswer: {{ input }}\n")
    server = fake_server(reply="red", record=True)
    _, suite = media_suite(tmp_path, server, [
        {"id": "photo", "input": [{"type": "image_url", "image_url": {"url": "photo.png"}}], "reference": "red"}])
    result = invoke(app, "run", suite, "-m", "openai/vision", "--prompt", "ask", "--prompts-dir",
                    tmp_path / "prompts", "-s", "contains")
    assert result.exit_code == 2, result.output
    assert "generator 'model' cannot pass images on" in error_lines(result.output)[0]
    assert server.stats.requests == 0


def test_a_remote_url_is_refused_unless_allowed(app, tmp_path, fake_server):
    server = fake_server(reply="red", record=True)
    url = "https://example.invalid/photo.png"
    data, suite = media_suite(tmp_path, server, [
        {"id": "web", "input": [{"type": "text", "text": "Colour?"}, {"type": "image_url", "image_url": {"url": url}}],
         "reference": "red"}])
    db = tmp_path / "runs.db"
    result = invoke(app, "run", suite, "-m", "openai/vision", "-s", "contains", "--db", f"sqlite:///{db}")
    assert result.exit_code == 2, result.output
    (line,) = error_lines(result.output)
    assert line.startswith(f"Error: {data}:1: field 'input[1]': a remote media URL ({url}): not fetched"), line
    assert server.stats.requests == 0 and not db.exists()
    allowed = invoke(app, "run", suite, "-m", "openai/vision", "-s", "contains", "--db", f"sqlite:///{db}",
                     "--allow-remote-media")
    assert allowed.exit_code in (0, 1), allowed.output
    (body,) = server.stats.bodies  # the URL itself is passed on: the provider fetches it
    assert body["messages"][0]["content"][1]["image_url"]["url"] == url


def test_media_are_stored_once_on_sqlite_and_postgresql(db_url, tmp_path):
    """Two suites and three runs naming one image hold its bytes once; they read back exact."""
    from evalyard.cases import load_jsonl
    from evalyard.store import Store

    image = png((9, 9, 9))
    write_bytes(tmp_path / "one.png", image)
    record = {"input": [{"type": "image_url", "image_url": {"url": "one.png"}}], "reference": "x"}
    write(tmp_path / "a.jsonl", "".join(json.dumps({**record, "id": f"c{i}"}) + "\n" for i in range(3)))
    store = Store(db_url)
    try:
        for suite_name in ("first", "second"):
            cases, origins = load_jsonl(tmp_path / "a.jsonl")
            suite_id = store.suite_id(suite_name, "v1", case_count=3)
            store.store_cases(suite_id, None, zip(cases, origins), suite_cases=True)
            assert store.media_bytes() == len(image)
        assert store.media(sha(image)) == ("image/png", image)
    finally:
        store.close()


def jpeg() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (3, 3)).save(out, "JPEG")
    return out.getvalue()


def big_png() -> bytes:
    """A small file of more pixels than the cap (one colour compresses to almost nothing)."""
    from PIL import Image

    out = io.BytesIO()
    Image.new("1", (8000, 5001)).save(out, "PNG")
    return out.getvalue()


def image_part(url):
    return {"type": "image_url", "image_url": {"url": url}}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


#: what, (files beside the data, the part), the field below the part, the message's start
BAD = {
    "missing file": ({}, image_part("nowhere.png"), "image_url.url", "media file not found: nowhere.png"),
    "a JPEG named .png": ({"photo.png": jpeg}, image_part("photo.png"), "image_url.url",
                          "declared as a PNG image (by its extension .png) but the bytes are a JPEG image"),
    "a data URI lying about its type": ({}, image_part("data:image/png;base64," + b64(jpeg())), "image_url.url",
                                        "declared as a PNG image (by the data URI) but the bytes are a JPEG image"),
    "a data URI that does not decode": ({}, image_part("data:image/png;base64,@@@notbase64"), "image_url.url",
                                        "the data URI's base64 does not decode"),
    "a data URI without base64": ({}, image_part("data:image/png,abc"), "image_url.url",
                                  "a data URI without ;base64"),
    "a truncated PNG": ({"cut.png": lambda: png()[:40]}, image_part("cut.png"), "image_url.url",
                        "a corrupt PNG image"),
    "text named .png": ({"notes.png": lambda: b"hello, world"}, image_part("notes.png"), "image_url.url",
                        "expected an image (PNG, JPEG, WebP or GIF), but the bytes are none of them"),
    "an unsupported type": ({"scan.bmp": lambda: b"BM"}, image_part("scan.bmp"), "image_url.url",
                            "unsupported media file type '.bmp'"),
    "an image over the pixel cap": ({"huge.png": big_png}, image_part("huge.png"), "image_url.url",
                                    "an image of 8000x5001 pixels, over the cap of 40,000,000 pixels"),
    "audio in an image part": ({"clip.wav": wav}, image_part("clip.wav"), "image_url.url",
                               "expected an image (PNG, JPEG, WebP or GIF), but the bytes are WAV audio"),
    "an image as wav audio": ({}, {"type": "input_audio", "input_audio": {"data": b64(png()), "format": "wav"}},
                              "input_audio.data", "declared as WAV audio (by format 'wav') but the bytes are a PNG image"),
    "audio that does not decode": ({}, {"type": "input_audio", "input_audio": {"data": "%%%", "format": "wav"}},
                                   "input_audio.data", "the audio's base64 does not decode"),
    "an unknown audio format": ({}, {"type": "input_audio", "input_audio": {"data": b64(wav()), "format": "ogg"}},
                                "input_audio.format", "unknown audio format 'ogg'"),
    "a WAV without frames": ({}, {"type": "input_audio", "input_audio": {"data": b64(wav(0)), "format": "wav"}},
                             "input_audio.data", "a WAV file without sound"),
}


@pytest.mark.parametrize("what", sorted(BAD))
def test_bad_media_are_refused_in_one_line_and_nothing_is_stored(app, tmp_path, what):
    files, part, below, message = BAD[what]
    for name, make in files.items():
        write_bytes(tmp_path / name, make())
    data = write(tmp_path / "cases.jsonl", json.dumps({"id": "ok", "input": "hi", "candidate": "x"}) + "\n"
                 + json.dumps({"id": "bad", "messages": [{"role": "user", "content": [
                     {"type": "text", "text": "Look:"}, part]}], "candidate": "x"}) + "\n")
    db = tmp_path / "runs.db"
    result = invoke(app, "run", data, "-s", "json_valid", "--db", f"sqlite:///{db}")
    assert result.exit_code == 2, result.output
    (line,) = error_lines(result.output)
    assert line.startswith(f"Error: {data}:2: field 'messages[0].content[1].{below}': {message}"), line
    assert not db.exists()


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SEEDS = [png(), jpeg(), wav(), png()[:60], b"GIF89a" + bytes(20), b"RIFF\x00\x00\x00\x00WEBPVP8 " + bytes(20)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.sampled_from(SEEDS), cut=st.integers(0, 4000), flips=st.lists(st.tuples(st.integers(0, 4000),
                                                                                       st.integers(0, 255)), max_size=4),
       name=st.sampled_from(["x.png", "x.jpg", "x.webp", "x.gif", "x.wav", "x"]),
       door=st.sampled_from(["file", "uri", "audio"]))
def test_any_bytes_through_any_door_load_or_fail_in_one_line(app, tmp_path_factory, seed, cut, flips, name, door):
    tmp = tmp_path_factory.mktemp("media")
    data = bytearray(seed[:cut] if cut < len(seed) else seed)
    for at, value in flips:
        if at < len(data):
            data[at] = value
    write_bytes(tmp / name, bytes(data))
    part = {"file": image_part(name), "uri": image_part("data:image/png;base64," + b64(bytes(data))),
            "audio": {"type": "input_audio", "input_audio": {"data": b64(bytes(data)), "format": "wav"}}}[door]
    path = write(tmp / "case.jsonl", json.dumps({"id": "a", "input": [part], "candidate": "x"}) + "\n")
    db = tmp / "runs.db"
    result = invoke(app, "run", path, "-s", "json_valid", "--db", f"sqlite:///{db}")
    if result.exit_code == 2:
        (line,) = error_lines(result.output)
        assert line.startswith(f"Error: {path}:1: field 'input[0]."), line
        assert not db.exists()
    else:
        assert result.exit_code in (0, 1), result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)


def test_plan_counts_image_tokens_as_litellm_does_and_says_unknown_otherwise(app, tmp_path, fake_server):
    """--plan: an OpenAI model's image tokens are litellm's count of the very image (its
    calculate_img_tokens on the data URI, detail high: tiles of the resized image); a model
    litellm has no tokenizer for leaves them out and says how many are unknown."""
    from evalyard.models.providers import load_litellm
    from litellm.litellm_core_utils.token_counter import calculate_img_tokens

    image = png(size=(1500, 700))
    write_bytes(tmp_path / "wide.png", image)
    server = fake_server(reply="x")
    question = {"type": "text", "text": "Describe the picture."}
    _, suite = media_suite(tmp_path, server, [
        {"id": "p", "input": [question, {"type": "image_url", "image_url": {"url": "wide.png", "detail": "high"}}]},
        {"id": "t", "input": [question]}], models=("openai/gpt-4o", "openai/vision"))

    def plan(model):
        result = invoke(app, "run", suite, "-m", model, "-s", "json_valid", "--plan", "--json")
        assert result.exit_code == 0, result.output
        (entry,) = [line for line in json.loads(result.stdout)["plan"]["lines"] if line["kind"] == "generator"][0]["models"]
        return entry

    counted = plan("openai/gpt-4o")
    load_litellm()
    expected = calculate_img_tokens("data:image/png;base64," + b64(image), mode="high")
    text_only = 2 * plan_text_tokens(app, tmp_path, server, question)
    assert counted["input_tokens"] == text_only + expected and expected > 85
    assert "1 images by litellm's image token rule" in counted["input_basis"]
    unknown = plan("openai/vision")
    assert unknown["media_tokens_unknown"] == 1 and "1 images or audio clips unknown" in unknown["input_basis"]
    assert server.stats.requests == 0


def plan_text_tokens(app, tmp_path, server, question) -> int:
    """The plan's input tokens of one generation asking ``question`` alone."""
    other = tmp_path / "text"
    _, suite = media_suite(other, server, [{"id": "t", "input": [question]}], models=("openai/gpt-4o",))
    result = invoke(app, "run", suite, "-m", "openai/gpt-4o", "-s", "json_valid", "--plan", "--json")
    return [line for line in json.loads(result.stdout)["plan"]["lines"] if line["kind"] == "generator"][0]["models"][0][
        "input_tokens"]


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_exports_carry_each_case_media_hash_and_path(app, tmp_path, fmt):
    image = png((3, 4, 5))
    write_bytes(tmp_path / "pic.png", image)
    data = write(tmp_path / "cases.jsonl", json.dumps({
        "id": "pic", "input": [{"type": "text", "text": "What?"}, {"type": "image_url", "image_url": {"url": "pic.png"}}],
        "candidate": "{}"}) + "\n" + json.dumps({"id": "plain", "input": "hi", "candidate": "{}"}) + "\n")
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = json.loads(invoke(app, "run", data, "-s", "json_valid", "--db", db, "--json").stdout)["run_id"]
    out = tmp_path / f"export.{fmt}"
    result = invoke(app, "runs", "export", run_id, "--format", fmt, "-o", out, "--db", db)
    assert result.exit_code == 0, result.output
    if fmt == "jsonl":
        rows = [json.loads(line) for line in out.read_text().splitlines()]
    elif fmt == "csv":
        import csv

        rows = [{**r, "media": json.loads(r["media"]) if r["media"] else None} for r in csv.DictReader(open(out))]
    else:
        import pyarrow.parquet as pq

        rows = [{**r, "media": json.loads(r["media"]) if r["media"] else None} for r in pq.read_table(out).to_pylist()]
    media = {r["case_id"]: r["media"] for r in rows}
    assert media["plain"] is None
    (record,) = media["pic"]
    assert record == {"field": "input[1]", "sha256": sha(image), "type": "image/png", "size": len(image),
                      "path": "pic.png", "width": 4, "height": 3}


def test_an_html_export_to_a_file_links_the_media_past_its_budget_from_beside_it(app, tmp_path):
    """`runs export --format html -o PAGE`: a clip larger than the page's embedding budget is
    written once beside the page and linked (on standard output it could only be left out)."""
    from evalyard.report.media_view import EMBED_MEDIA_BYTES

    clip = wav(EMBED_MEDIA_BYTES // 2 + 1000)  # 16-bit frames: over the budget
    (tmp_path / "long.wav").write_bytes(clip)
    data = tmp_path / "clips.jsonl"
    data.write_text(json.dumps({"id": "c1", "candidate": "turn left", "reference": "turn left", "input": [
        {"type": "text", "text": "Transcribe."},
        {"type": "input_audio", "input_audio": {"data": "long.wav", "format": "wav"}}]}) + "\n", encoding="utf-8")
    run = invoke(app, "run", data, "-s", "contains", "--json")
    assert run.exit_code == 0, run.output
    page = tmp_path / "page.html"
    done = invoke(app, "runs", "export", json.loads(run.stdout)["run_id"], "--format", "html", "-o", page)
    assert done.exit_code == 0, done.output
    beside = tmp_path / "page_media" / f"{sha(clip)}.wav"
    assert beside.read_bytes() == clip
    html = page.read_text(encoding="utf-8")
    assert f"page_media/{sha(clip)}.wav" in html and base64.b64encode(clip[:3000]).decode()[:64] not in html
