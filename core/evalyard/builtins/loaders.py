"""The core's data formats (JSONL, JSON, CSV), registered through the same hook as any plugin's.
How they read a file is the core's case-parsing library, ``evalyard.cases``."""

from __future__ import annotations

from ..cases import iter_csv, iter_jsonl, load_json
from ..hookspecs import hookimpl


@hookimpl
def register_loaders(register):
    register("jsonl", iter_jsonl, extensions=(".jsonl", ".ndjson"))
    register("json", load_json, extensions=(".json",))
    register("csv", iter_csv, extensions=(".csv",))
