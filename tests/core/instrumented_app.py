"""A small application instrumented as a user's would be: the OpenAI Python SDK with
OpenTelemetry's OpenAI instrumentation (``opentelemetry-instrumentation-openai-v2``), exporting
its traces and log events over OTLP/HTTP to wherever the standard ``OTEL_EXPORTER_OTLP_*``
variables say. Run as ``python instrumented_app.py BASE_URL QUESTION...``: each question is one
trace (an ``answer`` span around the model call); prints the trace ids as a JSON list."""

from __future__ import annotations

import json
import sys

from openai import OpenAI
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor


def main(base_url: str, questions: list[str]) -> None:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    client = OpenAI(base_url=base_url, api_key="not-a-key", max_retries=0)
    tracer = tracer_provider.get_tracer("instrumented-app")
    trace_ids = []
    for question in questions:
        with tracer.start_as_current_span("answer") as span:
            client.chat.completions.create(model="gpt-4o-mini", messages=[
                {"role": "system", "content": "Answer in one word."}, {"role": "user", "content": question}])
            trace_ids.append(format(span.get_span_context().trace_id, "032x"))
    OpenAIInstrumentor().uninstrument()
    ok = tracer_provider.force_flush() and logger_provider.force_flush()
    tracer_provider.shutdown()
    logger_provider.shutdown()
    print(json.dumps(trace_ids))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
