"""The core's data formats (JSONL, JSON, CSV, OpenTelemetry traces), registered through the same
hook as any plugin's. How they read a file is the core's case-parsing library, ``evalyard.cases``
(``evalyard.otlp_in`` for traces)."""

from __future__ import annotations

from ..cases import iter_csv, iter_jsonl, load_json
from ..hookspecs import hookimpl
from ..otlp_in import iter_otel_calls, iter_otel_traces
from ..trec import iter_trec_run, load_run_json


@hookimpl
def register_loaders(register):
    register("jsonl", iter_jsonl, extensions=(".jsonl", ".ndjson"))
    register("json", load_json, extensions=(".json",))
    register("csv", iter_csv, extensions=(".csv",))
    # OTLP exports of GenAI spans: one case per model call, or (otel-trace) one per trace.
    register("otel", iter_otel_calls, extensions=(".otlp.jsonl", ".otlp.pb", ".otlp.binpb"))
    register("otel-trace", iter_otel_traces)
    # what IR people have: TREC run files, and ranx / pytrec_eval JSON runs ({qid: {docid: score}})
    register("trec", iter_trec_run, extensions=(".trec", ".run"))
    register("run-json", load_run_json)
