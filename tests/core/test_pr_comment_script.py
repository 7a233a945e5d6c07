"""The CI tutorial's comment script (examples/ci/pr_comment.py), run as the workflow runs it, with
--dry-run: no request is made (no network in tests); it prints what it would send."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "ci" / "pr_comment.py"
FIXTURE = ROOT / "tests" / "data" / "markdown" / "compare_regression.md"
MARKER = "<!-- evalyard-comment -->"


def script(*args, cwd=None):
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"}
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=60)


def test_a_first_comment_is_created_with_the_marker_on_its_first_line():
    done = script(FIXTURE, "--repo", "acme/support-bot", "--pr", "17", "--dry-run")
    assert done.returncode == 0, done.stderr
    head, size, body = done.stdout.split("\n", 2)
    assert head == ("dry run, the pull request's comments not listed: would POST "
                    "https://api.github.com/repos/acme/support-bot/issues/17/comments")
    assert body == f"{MARKER}\n{FIXTURE.read_text()}" and size == f"{len(body)} characters:"


def test_our_earlier_comment_is_updated_and_a_pasted_marker_is_not(tmp_path):
    comments = [{"id": 11, "body": "looks good", "user": {"login": "alice"}},
                {"id": 12, "body": f"{MARKER}\nforged", "user": {"login": "mallory"}},
                {"id": 13, "body": f"{MARKER}\n## evalyard: old", "user": {"login": "github-actions[bot]"}}]
    listed = tmp_path / "comments.json"
    listed.write_text(json.dumps(comments))
    done = script(FIXTURE, "--repo", "acme/support-bot", "--pr", "17", "--dry-run", "--comments", listed)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == ("dry run, 3 comments given: would PATCH "
                                           "https://api.github.com/repos/acme/support-bot/issues/comments/13")
    listed.write_text(json.dumps(comments[:2]))
    again = script(FIXTURE, "--repo", "acme/support-bot", "--pr", "17", "--dry-run", "--comments", listed)
    assert "would POST" in again.stdout.splitlines()[0]


def test_a_body_past_githubs_limit_is_cut_with_a_note(tmp_path):
    long = tmp_path / "long.md"
    long.write_text("| row |\n" * 20_000)
    done = script(long, "--repo", "a/b", "--pr", "1", "--dry-run")
    body = done.stdout.split("\n", 2)[2]
    assert len(body) <= 65_536 and body.endswith("*Cut to fit a GitHub comment.*\n")


@pytest.mark.parametrize("args, error", [
    (["missing.md", "--repo", "a/b", "--pr", "1", "--dry-run"], "Error: missing.md: No such file or directory"),
    ([FIXTURE, "--repo", "a", "--pr", "1", "--dry-run"], "Error: --repo 'a': expected OWNER/NAME"),
    ([FIXTURE, "--repo", "a/b", "--pr", "x1", "--dry-run"], "Error: --pr 'x1': expected a pull request's number"),
    ([FIXTURE, "--repo", "a/b", "--pr", "1", "--marker", "evalyard", "--dry-run"],
     "Error: --marker 'evalyard': expected one HTML comment, <!-- ... -->"),
    ([FIXTURE, "--repo", "a/b", "--pr", "1", "--dry-run", "--comments", "bad.json"],
     "Error: bad.json, line 2: not JSON (Expecting property name enclosed in double quotes)"),
    ([FIXTURE, "--repo", "a/b", "--pr", "1", "--dry-run", "--comments", "shape.json"],
     "Error: shape.json, comment 0: expected an object with an integer id and a string body"),
    ([FIXTURE, "--repo", "a/b", "--pr", "1", "--comments", "shape.json"],
     "Error: --comments is for --dry-run (a real run lists the comments itself)"),
    ([FIXTURE, "--repo", "a/b", "--pr", "1"],
     "Error: GITHUB_TOKEN is not set (in a workflow: env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }})"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_sent(tmp_path, args, error):
    (tmp_path / "bad.json").write_text("[\n  {id: 1}\n]")
    (tmp_path / "shape.json").write_text('[{"id": "1", "body": "x"}]')
    done = script(*args, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [error]
