#!/usr/bin/env python3
"""Post a Markdown file as ONE comment on a GitHub pull request, or update it if it is there.

The comment is found again by a hidden marker (an HTML comment, ``<!-- evalyard-comment -->`` by
default) on its first line and by its author (the workflow's token: ``github-actions[bot]``), so
each push to the pull request edits the same comment instead of adding one. Python's standard library only: copy this file into your repository.

    python pr_comment.py comment.md --repo OWNER/NAME --pr NUMBER          # GITHUB_TOKEN in the environment
    python pr_comment.py comment.md --repo OWNER/NAME --pr NUMBER --dry-run

``--dry-run`` makes no request: it prints what it would send (method, address, body). With
``--comments FILE`` (the pull request's comments as GitHub's API lists them, a JSON array) it
decides between creating and updating as it would with the real list.

Exit status: 0 done (or shown), 2 bad usage or bad input (one line naming it), 1 GitHub refused.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.request

MARKER = "<!-- evalyard-comment -->"
LIMIT = 65_536  # GitHub refuses a longer comment body
API = os.environ.get("GITHUB_API_URL", "https://api.github.com")


class BadInput(Exception):
    pass


def body_of(path: str, marker: str) -> str:
    """The marker line and the file's text, cut with a note if GitHub would refuse it."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: {exc.strerror if isinstance(exc, OSError) else 'not UTF-8 text'}") from None
    body = f"{marker}\n{text}"
    if len(body) > LIMIT:
        note = "\n\n*Cut to fit a GitHub comment.*\n"
        body = body[:body.rfind("\n", 0, LIMIT - len(note))] + note
    return body


def read_comments(path: str) -> list[dict]:
    try:
        with open(path, encoding="utf-8") as handle:
            comments = json.load(handle)
    except OSError as exc:
        raise BadInput(f"{path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise BadInput(f"{path}, line {exc.lineno}: not JSON ({exc.msg})") from None
    if not isinstance(comments, list):
        raise BadInput(f"{path}: expected a JSON array of comments")
    for n, comment in enumerate(comments):
        if not isinstance(comment, dict) or not isinstance(comment.get("id"), int) \
                or not isinstance(comment.get("body"), str):
            raise BadInput(f"{path}, comment {n}: expected an object with an integer id and a string body")
    return comments


def request(method: str, url: str, token: str, payload: dict | None = None) -> object:
    data = json.dumps(payload).encode() if payload is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={
        "Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as response:
        return json.load(response)


def list_comments(repo: str, pr: int, token: str) -> list[dict]:
    comments, page = [], 1
    while True:  # 100 a page, until a short page
        found = request("GET", f"{API}/repos/{repo}/issues/{pr}/comments?per_page=100&page={page}", token)
        comments += found
        if len(found) < 100:
            return comments
        page += 1


def plan(repo: str, pr: int, marker: str, author: str, comments: list[dict]) -> tuple[str, str]:
    """(method, address): update the first comment of ``author`` that starts with the marker, else
    create one. Anyone may paste the marker into a comment of their own: only ours is edited."""
    for comment in comments:
        login = (comment.get("user") or {}).get("login")
        if comment["body"].startswith(marker) and (not author or login == author):
            return "PATCH", f"{API}/repos/{repo}/issues/comments/{comment['id']}"
    return "POST", f"{API}/repos/{repo}/issues/{pr}/comments"


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", help="the Markdown to post (e.g. from evalyard compare BASE NEW --format markdown)")
    parser.add_argument("--repo", required=True, help="OWNER/NAME ($GITHUB_REPOSITORY in a workflow)")
    parser.add_argument("--pr", required=True, help="the pull request's number")
    parser.add_argument("--marker", default=MARKER, help=f"the hidden first line that finds the comment ({MARKER})")
    parser.add_argument("--author", default="github-actions[bot]",
                        help="whose comment to update: the token's user (default github-actions[bot]; '' for any)")
    parser.add_argument("--dry-run", action="store_true", help="print what would be sent; send nothing")
    parser.add_argument("--comments", metavar="FILE", help="with --dry-run: the pull request's comments as JSON")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    try:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", args.repo):
            raise BadInput(f"--repo {args.repo!r}: expected OWNER/NAME")
        if not args.pr.isdigit() or int(args.pr) < 1:
            raise BadInput(f"--pr {args.pr!r}: expected a pull request's number")
        if not re.fullmatch(r"<!--[^\n]*-->", args.marker) or args.marker.count("-->") != 1:
            raise BadInput(f"--marker {args.marker!r}: expected one HTML comment, <!-- ... -->")
        if args.comments and not args.dry_run:
            raise BadInput("--comments is for --dry-run (a real run lists the comments itself)")
        body = body_of(args.file, args.marker)
        comments = read_comments(args.comments) if args.comments else []
        token = os.environ.get("GITHUB_TOKEN", "")
        if not args.dry_run and not token:
            raise BadInput("GITHUB_TOKEN is not set (in a workflow: env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }})")
    except BadInput as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    pr = int(args.pr)
    if args.dry_run:
        method, url = plan(args.repo, pr, args.marker, args.author, comments)
        listed = f"{len(comments)} comments given" if args.comments else "the pull request's comments not listed"
        print(f"dry run, {listed}: would {method} {url}\n{len(body)} characters:\n{body}", end="")
        return 0
    try:
        method, url = plan(args.repo, pr, args.marker, args.author, list_comments(args.repo, pr, token))
        done = request(method, url, token, {"body": body})
    except urllib.error.HTTPError as exc:
        print(f"Error: GitHub answered {exc.code} {exc.reason} to {exc.url}", file=sys.stderr)
        return 1
    print(f"{'updated' if method == 'PATCH' else 'created'} {done.get('html_url', url)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
