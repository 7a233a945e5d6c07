"""Content parts at the door: a message's content may be a list of text, image and audio parts
(the media read and checked by ``evalyard.media``: tests/models/test_media.py sends them on); a
bad media part, a file part or an unknown one is refused before anything runs (one line naming
file, line and field, exit 2, nothing stored, no model called), never read as its text alone."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testutil import error_lines

import evalyard
from evalyard.cli import cli

IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
AUDIO = {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}
TEXT = {"type": "text", "text": "What is in the image?"}

REFUSED = {
    "a PNG signature and nothing else": ([TEXT, IMAGE], "messages[0].content[1].image_url.url",
                                         "a corrupt PNG image"),
    "RIFF and nothing else": ([AUDIO, TEXT], "messages[0].content[0].input_audio.data",
                              "expected audio (WAV, MP3 or FLAC), but the bytes are none of them"),
    "file part": ([TEXT, {"type": "file", "file": {"file_id": "f"}}], "messages[0].content[1].type",
                  "a content part of type 'file'"),
    "unknown part": ([{"type": "video"}], "messages[0].content[0].type", "unknown content part type 'video'"),
    "part without a type": ([{"text": "hi"}], "messages[0].content[0].type", "unknown content part type None"),
    "text part without text": ([{"type": "text"}], "messages[0].content[0].text", "expected the part's text"),
    "part that is not an object": (["hi"], "messages[0].content[0]", "expected an object, got str"),
}


def suite(tmp_path, server, *records) -> object:
    data = tmp_path / "img.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    path = tmp_path / "suite.yaml"
    path.write_text(f"name: images\ndata: {data.name}\n"
                    f"models:\n  openai/vision:\n    api_base: {server.base_url}\n    api_key_env: FAKE_KEY\n")
    return data, path


@pytest.fixture
def app(isolated_home):
    return evalyard.Application(evalyard.Settings.from_env({**os.environ, "FAKE_KEY": "sk-fake"}))


@pytest.mark.parametrize("what", sorted(REFUSED))
def test_refused_before_the_model_is_called(app, tmp_path, fake_server, what):
    content, field, message = REFUSED[what]
    server = fake_server(reply="a cat")
    data, path = suite(tmp_path, server,
                       {"id": "first", "messages": [{"role": "user", "content": "hello"}], "reference": "x"},
                       {"id": "second", "messages": [{"role": "user", "content": content}], "reference": "a cat"})
    db = tmp_path / "runs.db"
    result = CliRunner().invoke(cli, ["run", str(path), "-m", "openai/vision", "-s", "contains",
                                      "--db", f"sqlite:///{db}"], obj=app)
    assert result.exit_code == 2, result.output
    (line,) = error_lines(result.output)
    assert line.startswith(f"Error: {data}:2: field {field!r}: {message}"), line
    assert server.stats.requests == 0
    assert not db.exists()


def test_text_parts_are_the_message(app, tmp_path, fake_server):
    """Text-only parts still load, and the model under test receives their text."""
    server = fake_server(reply="a cat", record=True)
    _, path = suite(tmp_path, server, {"id": "a", "messages": [{"role": "user", "content": [TEXT]}],
                                       "reference": "a cat"})
    result = CliRunner().invoke(cli, ["run", str(path), "-m", "openai/vision", "-s", "contains", "--json"],
                                obj=app)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["status"] == "completed"
    (body,) = server.stats.bodies
    assert "What is in the image?" in json.dumps(body["messages"])


parts = st.lists(st.one_of(
    st.dictionaries(st.sampled_from(["type", "text", "image_url", "input_audio"]),
                    st.one_of(st.none(), st.integers(), st.text(max_size=8),
                              st.sampled_from(["text", "image_url", "input_audio", "file", "refusal"])), max_size=3),
    st.text(max_size=5), st.none(), st.integers()), max_size=3)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=parts)
def test_any_parts_load_or_fail_in_one_line(app, tmp_path_factory, content):
    tmp = tmp_path_factory.mktemp("parts")
    path = tmp / "case.jsonl"
    path.write_text(json.dumps({"id": "a", "messages": [{"role": "user", "content": content}],
                                "candidate": "x"}) + "\n")
    db = tmp / "runs.db"
    result = CliRunner().invoke(cli, ["run", str(path), "-s", "json_valid", "--db", f"sqlite:///{db}"], obj=app)
    only_text = all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
                    for p in content)
    if only_text:
        assert result.exit_code in (0, 1), result.output
    else:
        assert result.exit_code == 2, result.output
        (line,) = error_lines(result.output)
        assert line.startswith(f"Error: {path}:1: field 'messages[0].content["), line
        assert not db.exists()
