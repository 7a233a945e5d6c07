"""Shared by the documentation tests: the site's source and the tools it is made with."""

from __future__ import annotations

from testutil import ROOT, docs_module

DOCS = ROOT / "docs"


def reference():
    return docs_module("evalyard_reference")


def transcripts():
    return docs_module("transcripts")


def page(path: str) -> str:
    return (DOCS / path).read_text(encoding="utf-8")
