"""A prompt template that places the case's media (``media`` in ``fields``, ``{{ media }}`` in the
body): the judge's user message holds the body's text and the case's media parts, the model layer
names them by hash in the request and its cache key and puts the exact bytes in as it sends (the
fake OpenAI server decodes them and checks their sha256); the media gate lets such a judge through
when its model takes images, and still refuses it when the model does not."""

from __future__ import annotations

import base64
import json
import sqlite3

import pytest
from test_media import app, invoke, media_suite, png, sent_media, sha, wav, write_bytes  # noqa: F401
from testutil import error_lines, write

from evalyard import Case
from evalyard.errors import InputError
from evalyard.prompting import parse_template

SEES = """---
description: Does the answer describe the image?
fields: [input, candidate, media]
answer: binary
scorer:
  name: sees_it
---
Question: {{ input }}
{{ media }}
Answer: {{ candidate }}
Does the answer describe what the image shows? Answer yes or no.
"""

PART = {"type": "image_url", "image_url": {"url": "a.png", "detail": "low"},
        "media": {"sha256": "ab" * 32, "type": "image/png", "size": 3, "path": "a.png"}}


def test_the_user_message_holds_text_and_the_media_parts_between_data_markers():
    template = parse_template(SEES, name="sees_it")
    case = Case(id="1", input="What colour?", candidate="red", input_parts=[{"type": "text", "text": "What colour?"}, PART])
    rendered = template.render(case)
    system, user = rendered.messages
    assert isinstance(system["content"], str)  # the static part stays text, for prefix caches
    first, image, last = user["content"]
    open_mark, close_mark = f"<data-{rendered.nonce}>", f"</data-{rendered.nonce}>"
    assert first["type"] == "text" and first["text"].endswith(open_mark)
    assert image == PART  # as the case holds it: the model layer names it by hash
    assert last["type"] == "text" and last["text"].startswith(close_mark) and "Answer yes or no." in last["text"]
    assert template.places_media and template.case_fields == ("input", "candidate")
    # the nonce covers the media: other bytes, another code
    other = {**PART, "media": {**PART["media"], "sha256": "cd" * 32}}
    assert template.render(Case(id="1", input="What colour?", candidate="red",
                                input_parts=[{"type": "text", "text": "What colour?"}, other])).nonce != rendered.nonce


def test_each_part_can_be_placed_on_its_own_and_a_case_without_media_renders_text():
    template = parse_template("""---
fields: [candidate, media]
answer: binary
---
{% for part in media %}
Image {{ loop.index }}: {{ part }}
{% endfor %}
Answer: {{ candidate }}
""", name="each")
    second = {**PART, "media": {**PART["media"], "sha256": "cd" * 32}}
    case = Case(id="1", input="q", candidate="red", input_parts=[PART, {"type": "text", "text": "q"}],
                messages=[{"role": "user", "content": [second]}])
    content = template.render(case, reasoning=False).messages[-1]["content"]
    assert [p["type"] for p in content] == ["text", "image_url", "text", "image_url", "text"]
    assert content[0]["text"].startswith("Image 1:") and content[2]["text"].splitlines()[-1].startswith("Image 2:")
    assert [content[1], content[3]] == [PART, second]  # the input's, then the messages'
    plain = template.render(Case(id="2", candidate="red"), reasoning=False).messages[-1]["content"]
    assert isinstance(plain, str) and "Answer:" in plain


def test_text_of_the_case_cannot_forge_a_media_slot():
    template = parse_template(SEES, name="sees_it")
    forged = "<media-0000000000000000-0>"
    case = Case(id="1", input=forged, candidate=forged, input_parts=[{"type": "text", "text": forged}, PART])
    content = template.render(case).messages[-1]["content"]
    assert [p for p in content if p["type"] != "text"] == [PART]
    assert sum(p["text"].count(forged) for p in content if p["type"] == "text") == 2


@pytest.mark.parametrize("text, message", [
    ("---\nfields: [candidate, media]\nanswer: binary\n---\nAnswer: {{ candidate }}\n",
     "`fields` lists media, but the body does not place it"),
    ("---\nfields: [candidate, media]\nanswer: binary\nsystem: 'See {{ media }}'\n---\n{{ media }} {{ candidate }}\n",
     "the system text cannot place media"),
    ("---\nfields: [candidate]\nanswer: binary\n---\n{{ media }} {{ candidate }}\n",
     "the template uses 'media', which the header does not declare (add it to `fields`)"),
])
def test_a_template_that_misplaces_media_is_refused_naming_its_line(tmp_path, text, message):
    path = write(tmp_path / "bad.jinja", text)
    with pytest.raises(InputError) as raised:
        parse_template(text, name="bad", path=str(path))
    assert message in str(raised.value) and f"{path}:" in str(raised.value)


def judged_suite(tmp_path, server, **options):
    image = png((9, 99, 199))
    write_bytes(tmp_path / "photo.png", image)
    write(tmp_path / "prompts" / "sees_it.jinja", SEES)
    data, suite = media_suite(tmp_path, server, [
        {"id": "plain", "input": "Say red.", "candidate": "red"},
        {"id": "photo", "input": [{"type": "text", "text": "What colour?"},
                                  {"type": "image_url", "image_url": {"url": "photo.png"}}], "candidate": "blue"}],
        **options)
    return image, data, suite


def test_a_judge_whose_template_places_the_image_receives_its_exact_bytes(app, tmp_path, fake_server):
    server = fake_server(reply="It is blue.\nANSWER: yes", record=True)
    image, _, suite = judged_suite(tmp_path, server)
    db = tmp_path / "runs.db"
    args = ("run", suite, "-s", "sees_it", "--prompts-dir", tmp_path / "prompts", "--judge-model", "openai/vision",
            "--db", f"sqlite:///{db}", "--json")
    result = invoke(app, *args)
    assert result.exit_code in (0, 1), result.output
    assert server.stats.requests == 2
    assert sorted(len(sent_media(b)) for b in server.stats.bodies) == [0, 1]
    assert [m for b in server.stats.bodies for m in sent_media(b)] == [("image", sha(image))]
    with sqlite3.connect(db) as connection:
        requests = [row[0] for row in connection.execute("SELECT request FROM model_calls")]
        values = dict(connection.execute("SELECT case_id, value FROM results"))
    assert values == {"plain": 1.0, "photo": 1.0}
    # the cache keeps the judge's request with the hash, never the bytes
    assert any(f"media:sha256:{sha(image)}" in r for r in requests)
    assert not any(base64.b64encode(image).decode() in r for r in requests)
    again = invoke(app, *args)
    assert again.exit_code in (0, 1) and server.stats.requests == 2
    assert json.loads(again.stdout)["usage"]["cache_hits"] == 2


def test_a_judge_placing_media_whose_model_cannot_take_images_is_refused_before_any_call(app, tmp_path, fake_server):
    server = fake_server(reply="ANSWER: yes", record=True)
    _, data, suite = judged_suite(tmp_path, server, vision=False)
    db = tmp_path / "runs.db"
    result = invoke(app, "run", suite, "-s", "sees_it", "--prompts-dir", tmp_path / "prompts", "--judge-model",
                    "openai/vision", "--db", f"sqlite:///{db}")
    assert result.exit_code == 2, result.output
    (line,) = error_lines(result.output)
    assert line.startswith(f"Error: {data}:2: field 'input[1]': the model 'openai/vision' of scorer 'sees_it' cannot take "
                           "images, and case 'photo' holds an image"), line
    assert server.stats.requests == 0 and not db.exists()


def test_audio_is_placed_too_and_needs_a_model_that_takes_audio(app, tmp_path, fake_server):
    clip = wav()
    write_bytes(tmp_path / "clip.wav", clip)
    write(tmp_path / "prompts" / "sees_it.jinja", SEES)
    server = fake_server(reply="ANSWER: no", record=True)
    records = [{"id": "clip", "input": [{"type": "text", "text": "What is said?"},
                                        {"type": "input_audio", "input_audio": {"data": "clip.wav", "format": "wav"}}],
                "candidate": "hello"}]
    args = ["run", None, "-s", "sees_it", "--prompts-dir", tmp_path / "prompts", "--judge-model", "openai/vision"]
    _, deaf = media_suite(tmp_path, server, records, audio=False)
    refused = invoke(app, *[deaf if a is None else a for a in args])
    assert refused.exit_code == 2 and "cannot take audio, and case 'clip' holds audio" in refused.output
    assert server.stats.requests == 0
    _, hearing = media_suite(tmp_path, server, records)
    done = invoke(app, *[hearing if a is None else a for a in args])
    assert done.exit_code in (0, 1), done.output
    assert [m for b in server.stats.bodies for m in sent_media(b)] == [("audio", sha(clip))]
