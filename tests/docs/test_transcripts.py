"""The pages' command-line transcripts are what the program prints now (docs/transcripts.py
runs them again and compares, with run ids, times and paths masked). `make docs-transcripts`
rewrites them after a deliberate change of output."""

from __future__ import annotations

import pytest

from docs_helpers import DOCS, transcripts

PAGES = sorted(path.relative_to(DOCS).as_posix() for path in transcripts().pages())


def test_the_pages_have_transcripts():
    assert {"tutorials/first-ten-minutes.md", "tutorials/scorer-plugin.md", "tutorials/ci.md"} <= set(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_a_transcript_is_what_the_program_prints(page):
    diff = transcripts().check(DOCS / page)
    assert not diff, f"docs/{page} differs from what its commands print now (make docs-transcripts):\n{diff}"


def test_an_edited_transcript_is_caught_and_regenerating_restores_it(tmp_path):
    """The check fails when a transcript's output was edited by hand, naming the line, and
    regenerating the page brings back what the program prints."""
    tool = transcripts()
    page = tmp_path / "page.md"
    page.write_text("Intro.\n\n<!-- transcript\nevalyard prompts list\n-->\n```console\n```\n<!-- /transcript -->\n",
                    encoding="utf-8")
    page.write_text(tool.render(page), encoding="utf-8")
    assert tool.check(page) == ""
    printed = page.read_text(encoding="utf-8")
    assert "$ evalyard prompts list" in printed and "judge/criterion" in printed
    edited = printed.replace("judge/criterion ", "judge/criterium ", 1)
    assert edited != printed
    page.write_text(edited, encoding="utf-8")
    diff = tool.check(page)
    assert "-judge/criterium" in diff.replace(" ", "") or "judge/criterium" in diff
    assert diff.count("\n+") >= 1
    page.write_text(tool.render(page), encoding="utf-8")
    assert tool.check(page) == "" and page.read_text(encoding="utf-8") == printed


def test_masks_hide_what_varies_and_keep_what_does_not():
    tool = transcripts()
    text = ("run 0123456789ab  suite quickstart  20 cases  completed in 1.87s\n"
            "created 2026-11-28 01:44:28  /tmp/home/evalyard.db\n"
            "exact_match  20  0  0.100")
    masked = tool.mask(text, "/tmp/home")
    assert masked == ("run xxxxxxxxxxxx  suite quickstart  20 cases  completed in N s\n"
                      "created YYYY-MM-DD hh:mm:ss  $EVALYARD_HOME/evalyard.db\n"
                      "exact_match  20  0  0.100")
