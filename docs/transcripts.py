"""Regenerate, or check, the command-line transcripts in the documentation pages.

A transcript is written in a page between two HTML comments (invisible in the site)::

    <!-- transcript
    evalyard run examples/quickstart.yaml --name tour -s exact_match
    evalyard runs list
    -->
    ```console
    $ evalyard run examples/quickstart.yaml --name tour -s exact_match
    ... what the command printed ...
    ```
    <!-- /transcript -->

The commands run one after the other, in a scratch directory beside a link to `examples/`, with a
data directory of their
own (one per page, so a later transcript sees the runs of an earlier one), the installed plugins
and no network; the fenced block between
the comments is replaced by each command and what it printed (stdout and stderr, as a terminal
shows them). Figures that change from
one run to the next (run ids, durations, temporary paths, versions) are masked, so a transcript
only changes when the program's output does.

    python docs/transcripts.py            # rewrite every page's transcripts
    python docs/transcripts.py --check    # exit 1, with a diff, when a page differs

(`make docs-transcripts` is the first; tests/docs/test_transcripts.py runs the second.)
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
BLOCK = re.compile(r"(?P<open><!-- transcript\n(?P<commands>.*?)\n-->\n)(?P<body>.*?)(?P<close><!-- /transcript -->)",
                   re.S)

#: What varies between two runs of the same command, and what it is shown as.
MASKS = (
    (re.compile(r"\b[0-9a-f]{12}\b"), "x" * 12),                           # run ids (as wide: tables stay aligned)
    (re.compile(r"\b\d{4}-\d\d-\d\d([ T])\d\d:\d\d:\d\d(\.\d+)?(\+00:00|Z)?"), r"YYYY-MM-DD\1hh:mm:ss"),
    (re.compile(r'"python": "[^"]+"'), '"python": "3.x"'),
    (re.compile(r"\b\d+(\.\d+)? ?(ms|s)\b(?! ?[a-z])"), "N s"),            # durations
    (re.compile(r"\b\d+(\.\d+)?/s\b"), "N/s"),                              # throughput
    (re.compile(r"evalyard \d+\.\d+\.\d+\S*"), "evalyard X.Y.Z"),
)


def mask(text: str, home: str) -> str:
    text = text.replace(home, "$EVALYARD_HOME").replace(str(ROOT) + os.sep, "")
    for pattern, shown in MASKS:
        text = pattern.sub(shown, text)
    return "\n".join(line.rstrip() for line in text.splitlines())


def reader_env(home: str) -> dict[str, str]:
    """A reader's environment: the installed plugins, a data directory of the page's own, offline."""
    bin_dir = Path(sys.executable).parent
    env = {key: value for key, value in os.environ.items() if not key.startswith("EVALYARD_")}
    env.update(EVALYARD_HOME=home, EVALYARD_MODELS_DIR=str(Path(home) / "models"), COLUMNS="100",
               PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", LITELLM_LOCAL_MODEL_COST_MAP="True",
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", NO_COLOR="1")
    return env


def run_commands(commands: list[str], home: str) -> str:
    """Each command and what it printed (stdout and stderr, as a terminal shows them), masked.
    They run in a scratch directory holding a link to the repository's `examples/`, so a command
    may write files (`-o report.html`) as a reader's would, and the checkout stays as it was."""
    env = reader_env(home)
    work = Path(home) / "work"
    if not work.exists():
        work.mkdir()
        (work / "examples").symlink_to(ROOT / "examples")
    lines = []
    for command in commands:
        # A shell, as a reader's: pipes and `; echo $?` work as they would for them.
        done = subprocess.run(["bash", "-c", command], cwd=work, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=600)
        lines.append(f"$ {command}")
        output = mask(done.stdout, home)
        if output:
            lines.append(output)
        if done.returncode not in (0, 1):  # 1 is a failed check, which pages may show on purpose
            raise RuntimeError(f"`{command}` exited {done.returncode}: {done.stdout.strip()[-500:]}")
    return "```console\n" + "\n".join(lines) + "\n```\n"


def render(page: Path) -> str:
    """The page with each transcript run again, in order, in one data directory per page (a later
    transcript sees the runs an earlier one made, as a reader following the page would)."""
    text = page.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="evalyard-transcript-") as home:
        def replace(match: re.Match) -> str:
            commands = [line.strip() for line in match["commands"].splitlines() if line.strip()]
            return match["open"] + run_commands(commands, home) + match["close"]

        return BLOCK.sub(replace, text)


def pages(paths: list[str] | None = None) -> list[Path]:
    if paths:
        return [Path(p).resolve() for p in paths]
    return sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts and BLOCK.search(p.read_text("utf-8")))


def check(page: Path) -> str:
    """The diff between a page and what its transcripts print now ('' when they agree)."""
    old = page.read_text(encoding="utf-8")
    new = render(page)
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"{page.name} (page)",
                                        f"{page.name} (the program now)"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a transcript differs")
    parser.add_argument("pages", nargs="*", help="pages to do (default: the README and every page with a transcript)")
    args = parser.parse_args(argv)
    status = 0
    for page in pages(args.pages) if args.pages else [ROOT / "README.md", *pages()]:
        if args.check:
            diff = check(page)
            if diff:
                print(diff)
                status = 1
        else:
            new = render(page)
            if new != page.read_text(encoding="utf-8"):
                page.write_text(new, encoding="utf-8")
                print(f"updated {page.relative_to(ROOT)}")
    return status


if __name__ == "__main__":
    sys.exit(main())
