"""Nothing in the repository reads data from outside it: a fresh clone with nothing beside it
must run every test, benchmark and command (CI keeps a folder of reference data beside its
checkout; users do not)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from testutil import ROOT

SCANNED = ("tests", "core", "plugins", "benchmarks")
# Places where a developer's machine keeps data, never a user's: an absolute path into one of
# them is a file the clone does not have. System paths (/usr/bin/chromium, /proc, /dev) are fine.
PRIVATE_ROOTS = re.compile(r"^/(work|home|mnt|srv|data|opt|Users)/")
#: The folder CI keeps beside its checkout (spelt here only as a pattern and a name, so this file
#: does not itself read like a file that uses it).
BESIDE = "sha" "red"
OUTSIDE = re.compile(rf"(^|/)\.\./{BESIDE}(/|$)|(^|/){BESIDE}/(reference|nltk_data|seeds)")


def offences(source: str) -> list[tuple[int, str]]:
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if PRIVATE_ROOTS.match(node.value) or OUTSIDE.search(node.value):
                found.append((node.lineno, node.value))
        # ROOT.parent / that folder's name: a path built beside the repository
        if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
                and isinstance(node.right, ast.Constant) and node.right.value == BESIDE):
            found.append((node.lineno, f"... / {BESIDE!r}"))
    return found


def python_files():
    me = Path(__file__).resolve()
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.resolve() != me and ".venv" not in path.parts:
                yield path


def test_no_file_reads_data_from_outside_the_repository():
    found = [f"{path.relative_to(ROOT)}:{line}: {text!r}"
             for path in python_files() for line, text in offences(path.read_text(encoding="utf-8"))]
    assert not found, "reads data from outside the repository:\n" + "\n".join(found)


def test_the_check_catches_each_kind_of_outside_read():
    assert offences(f'DATA = ROOT.parent / "{BESIDE}" / "reference"\n')
    assert offences(f'NLTK_DATA = CHECKOUT / "{BESIDE}/nltk_data"\n')  # the folder's name without ../
    assert offences(f'open("../{BESIDE}/nltk_data/corpora")\n')
    assert offences('load("/home/dev/cases.jsonl")\n')
    assert not offences(f'BROWSER = "/usr/bin/chromium"\n"""A docstring may mention ../{BESIDE}."""\n')
    assert not offences(f'"""../{BESIDE} in a module docstring"""\nREFERENCE = TESTS / "data" / "reference"\n')


def test_reference_data_is_in_the_repository():
    reference = ROOT / "tests" / "data" / "reference"
    for name in ("cases.jsonl", "arthur_bench_scores.jsonl", "code_cases.jsonl", "code_results.jsonl",
                 "trust/asqa_eval.json", "checklist/scores.jsonl", "ragas/summary_score_golden.jsonl"):
        assert (reference / name).is_file(), name
    assert "original packages" in (reference / "README.md").read_text(encoding="utf-8")
