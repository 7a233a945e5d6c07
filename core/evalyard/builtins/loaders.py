"""The core's data formats (JSONL, JSON, CSV), registered through the same hook as any plugin's.
How they read a file is the core's case-parsing library, ``evalyard.cases``."""

from __future__ import annotations

from ..cases import load_csv, load_json, load_jsonl
from ..hookspecs import hookimpl


@hookimpl
def register_loaders(register):
    register("jsonl", load_jsonl, extensions=(".jsonl", ".ndjson"))
    register("json", load_json, extensions=(".json",))
    register("csv", load_csv, extensions=(".csv",))
