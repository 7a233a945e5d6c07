"""``evalyard testset generate``: documents -> chunks -> questions -> checked test set, through the
real CLI and the model layer against a fake OpenAI server answering from rules. The rules key on
markers the chunks carry (MARKA1 ...), so each question's chunks are known and checkable."""

from __future__ import annotations

import json
import os
import random

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testutil import error_lines

import evalyard
from evalyard.cli import cli
from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig

FILLER = ("The team keeps this page current so that every reader finds the same steps described in the "
          "same order and with the same names throughout the whole manual today")


def prose(marker: str, *extra: str) -> str:
    return f"{marker} {' '.join(extra)} {FILLER} {marker.lower()}."


def minimal_pdf(text: str) -> bytes:
    """A one-page PDF showing ``text`` in Helvetica (offsets computed, so pypdf reads it cleanly)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{n} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


@pytest.fixture
def docs(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text(f"---\ntitle: A\n---\n# Alpha\n\n{prose('MARKA1', 'zephyrine', 'quokkas')}\n\n"
                                 f"## Second\n\n{prose('MARKA2')}\n")
    (folder / "b.md").write_text(prose("MARKB1", "zephyrine", "quokkas") + "\n")
    (folder / "c.html").write_text(f"<html><head><script>var MARKSCRIPT = 1;</script></head>"
                                   f"<body><p>{prose('MARKC1')}</p></body></html>")
    (folder / "d.pdf").write_bytes(minimal_pdf(prose("MARKD1")))
    (folder / "notes.bin").write_bytes(b"\x00\x01")  # not a document: skipped in a folder
    return folder


def question(text, answer):
    return {"question": text, "answer": answer}


RULES = [
    {"contains": ["Passage 1:", "MARKA1", "MARKB1"], "content": question("Q-multi how do zephyrine and quokkas "
                                                                         "relate?", "both pages name them")},
    {"contains": ["Decide whether", "Q-B1"], "content": {"reason": "the passage does not say", "answerable": False}},
    {"contains": "Decide whether", "content": {"reason": "the passages say it", "answerable": True}},
    {"contains": "MARKA1", "content": question("Q-A1 what is alpha?", "alpha")},
    {"contains": "MARKA2", "content": question("What is the second topic?", "the second")},
    {"contains": "MARKB1", "content": question("Q-B1 what is b?", "b")},
    {"contains": "MARKC1", "content": question("what is the SECOND topic", "second")},  # a duplicate of A2's
    {"contains": "MARKD1", "content": question("Q-D1 what does the pdf say?", "d")},
]


@pytest.fixture
def server(tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump(RULES, sort_keys=False))
    with FakeOpenAIServer(FakeServerConfig(rules=str(rules), record=True)) as fake:
        yield fake


@pytest.fixture
def app(isolated_home):
    return evalyard.Application(evalyard.Settings.from_env({**os.environ, "FAKE_KEY": "sk-fake"}))


@pytest.fixture
def models_file(tmp_path, server):
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump({"models": {"openai/writer": {"api_base": server.base_url, "api_key_env": "FAKE_KEY",
                                                                 "supports_schema": True}}}))
    return path


def generate(app, docs, out, models_file, *extra):
    return CliRunner().invoke(cli, ["testset", "generate", str(docs), "-o", str(out), "-m", "openai/writer",
                                    "--models", str(models_file), "-n", "6", "--multi-hop", "0.2", *extra],
                              obj=app, catch_exceptions=False)


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_documents_to_a_checked_test_set(app, tmp_path, docs, server, models_file):
    out = tmp_path / "cases.jsonl"
    result = generate(app, docs, out, models_file)
    assert result.exit_code == 0, result.output
    chunks = {c["id"]: c for c in read_jsonl(tmp_path / "cases.chunks.jsonl")}
    assert sorted(chunks) == ["a.md#1", "a.md#2", "b.md#1", "c.html#1", "d.pdf#1"]
    assert "MARKSCRIPT" not in json.dumps(chunks) and "title: A" not in chunks["a.md#1"]["text"]
    assert "MARKD1" in chunks["d.pdf#1"]["text"]
    cases = {c["id"]: c for c in read_jsonl(out)}
    # q0004 (b.md) was found unanswerable, q0005 (c.html) repeats q0003's question
    assert sorted(cases) == ["q0001", "q0002", "q0003", "q0006"], result.output
    multi = cases["q0001"]
    assert multi["relevant"] == ["a.md#1", "b.md#1"] and multi["metadata"]["testset"]["kind"] == "multi_hop"
    assert multi["reference_contexts"] == [chunks["a.md#1"]["text"], chunks["b.md#1"]["text"]]
    assert cases["q0006"]["relevant"] == ["d.pdf#1"] and cases["q0006"]["input"] == "Q-D1 what does the pdf say?"
    for case in cases.values():
        meta = case["metadata"]["testset"]
        assert meta["answerable"] is True and meta["check_reason"] == "the passages say it"
        assert meta["style"] in ("formal", "casual", "search", "misspelled") and meta["model"] == "openai/writer"
        assert all(chunk_id in chunks for chunk_id in case["relevant"])
    assert "1 dropped as duplicate, 1 dropped as not answerable" in result.output
    assert server.stats.requests == 6 + 5  # six questions, five checks (the duplicate is not checked)
    # the model under test never sees the check's verdicts: each question prompt holds its chunks only
    prompts = [json.dumps(body["messages"]) for body in server.stats.bodies]
    assert sum("MARKB1" in p and "Decide whether" not in p for p in prompts) == 2  # its own and the multi-hop

    # a rerun asks nothing and writes the same test set
    before, first = server.stats.requests, out.read_text()
    again = generate(app, docs, out, models_file)
    assert again.exit_code == 0 and server.stats.requests == before, again.output
    assert out.read_text() == first
    assert "model calls made 0, answered from the cache 11" in again.output

    # the second command: a retriever over the chunk file, scored against the chunks each question came from
    retriever = tmp_path / "retriever.py"
    retriever.write_text("import json\n"
                         f"CHUNKS = [json.loads(l) for l in open({str(tmp_path / 'cases.chunks.jsonl')!r})]\n"
                         "def search(query):\n"
                         "    return sorted(CHUNKS, key=lambda c: c['id'], reverse=True)\n")
    scored = CliRunner().invoke(cli, ["run", str(out), "-g", f"rag/pipeline:retriever={retriever}:search",
                                      "-s", "recall@1", "-s", "recall@3", "--json"], obj=app, catch_exceptions=False)
    assert scored.exit_code == 0, scored.output
    means = {name: s["mean"] for name, s in json.loads(scored.stdout)["scorers"].items()}
    # the ranking is d.pdf#1, c.html#1, b.md#1, a.md#2, a.md#1: only q0006's chunk is first, and
    # q0001 finds one of its two chunks in the top 3
    assert means == {"recall@1": 0.25, "recall@3": 0.375}


def test_keep_unanswerable_and_no_check(app, tmp_path, docs, server, models_file):
    out = tmp_path / "all.jsonl"
    assert generate(app, docs, out, models_file, "--keep-unanswerable").exit_code == 0
    cases = {c["id"]: c for c in read_jsonl(out)}
    assert cases["q0004"]["metadata"]["testset"]["answerable"] is False
    out2 = tmp_path / "unchecked.jsonl"
    before = server.stats.requests
    assert generate(app, docs, out2, models_file, "--no-check").exit_code == 0
    assert server.stats.requests == before  # every question is cached, and nothing is checked
    unchecked = {c["id"]: c for c in read_jsonl(out2)}
    assert "q0004" in unchecked and "answerable" not in unchecked["q0004"]["metadata"]["testset"]


def test_plan_asks_nothing_and_sees_the_cache(app, tmp_path, docs, server, models_file):
    out = tmp_path / "cases.jsonl"
    planned = generate(app, docs, out, models_file, "--plan")
    assert planned.exit_code == 0, planned.output
    assert server.stats.requests == 0 and not out.exists()
    rows = {line.split()[0]: line.split() for line in planned.output.splitlines() if line.startswith(("single", "multi"))}
    assert rows["single_hop"][2:4] == ["5", "0"] and rows["multi_hop"][2:4] == ["1", "0"]
    generate(app, docs, out, models_file)
    rows = {line.split()[0]: line.split() for line in generate(app, docs, out, models_file, "--plan").output.splitlines()
            if line.startswith(("single", "multi"))}
    assert rows["single_hop"][2:4] == ["5", "5"] and rows["multi_hop"][2:4] == ["1", "1"]


def test_a_question_the_model_cannot_write_is_that_items_error(app, tmp_path, docs, models_file, server):
    rules = [r for r in RULES if r.get("contains") != "MARKD1"] + [{"contains": "MARKD1", "content": "no JSON here"}]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules, sort_keys=False))
    out = tmp_path / "cases.jsonl"
    result = generate(app, docs, out, models_file)
    assert result.exit_code == 1, result.output
    assert "q0006 (d.pdf#1)" in result.output
    assert sorted(c["id"] for c in read_jsonl(out)) == ["q0001", "q0002", "q0003"]


BAD = {
    "no such folder": (lambda d: str(d / "missing"), "no such file or folder"),
    "a format not read": (lambda d: _write(d / "x.docx", b"PK"), "cannot read .docx documents"),
    "a corrupt PDF": (lambda d: _write(d / "x.pdf", b"%PDF-1.4\ngarbage"), "not a readable PDF"),
    "not UTF-8": (lambda d: _write(d / "x.md", b"caf\xe9 " * 40), "not UTF-8 text"),
    "no text": (lambda d: _write(d / "x.md", b"\n\n   \n"), "the documents hold no text"),
}


def _write(path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("what", sorted(BAD))
def test_bad_documents_are_one_line_and_nothing_written(app, tmp_path, what):
    make, message = BAD[what]
    given_path = make(tmp_path)
    out = tmp_path / "cases.jsonl"
    result = CliRunner().invoke(cli, ["testset", "generate", given_path, "-o", str(out), "-m", "openai/writer"],
                                obj=app)
    assert result.exit_code == 2, result.output
    (line,) = error_lines(result.output)
    assert line.startswith(f"Error: {given_path}: {message}"), line
    assert not out.exists() and not (tmp_path / "cases.chunks.jsonl").exists()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=400), suffix=st.sampled_from([".md", ".txt", ".html", ".pdf", ".rst"]),
       pdf_head=st.booleans())
def test_any_bytes_chunk_or_fail_in_one_line(app, tmp_path_factory, data, suffix, pdf_head):
    """Every document door: arbitrary bytes in any read format either chunk or stop in one line
    naming the file (exit 2), before any model is asked (--plan asks none anyway)."""
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / f"doc{suffix}"
    path.write_bytes((b"%PDF-1.4\n" if pdf_head and suffix == ".pdf" else b"") + data)
    result = CliRunner().invoke(cli, ["testset", "generate", str(path), "-o", str(folder / "o.jsonl"), "-m",
                                      "openai/writer", "--plan", "--min-words", "1"], obj=app)
    if result.exit_code == 2:
        (line,) = error_lines(result.output)
        assert line.startswith(f"Error: {path}"), line
    else:
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)


def test_chunks_follow_paragraphs_and_headings():
    from evalyard_retrieval.testset.documents import chunk_text

    words = [f"w{n}" for n in range(250)]
    text = "# Title\n\n" + " ".join(words[:50]) + "\n\n" + " ".join(words[50:100]) + "\n\n## Next\n\n" + \
           ". ".join(" ".join(words[i:i + 10]) for i in range(100, 250, 10))
    chunks = chunk_text(text, "doc.md", size=60)
    assert [c.id for c in chunks][:2] == ["doc.md#1", "doc.md#2"]
    assert chunks[0].text.startswith("# Title") and "w49" in chunks[0].text and "w50" not in chunks[0].text
    assert chunks[2].text.startswith("## Next")  # a heading starts a chunk
    assert all(c.words <= 60 for c in chunks)
    assert " ".join(" ".join(c.text.split()) for c in chunks).replace(".", "").split() == \
        ["#", "Title", *words[:100], "##", "Next", *words[100:]]  # nothing lost, nothing repeated
    rng = random.Random(3)
    for size in (20, 37, 200):
        text = "\n\n".join(" ".join(rng.choice(words) for _ in range(rng.randint(1, 400))) for _ in range(8))
        assert all(c.words <= size for c in chunk_text(text, "r.txt", size))
