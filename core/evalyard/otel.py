"""A finished run as OpenTelemetry data, sent to an OTLP/HTTP endpoint (``evalyard run --otel``).

- The run is one span, ``evalyard.run``, from the run's start to its end, carrying the run's id,
  name, suite and status and, for each scorer, the statistics of the run's stored totals: mean and
  95% confidence interval, count, errors, pass rate (``evalyard.scorer.<name>.mean``,
  ``.ci95.lower``, ``.ci95.upper``...).
- Each result is one event ``gen_ai.evaluation.result`` (OpenTelemetry's GenAI semantic
  conventions: an event is a log record with an event name) inside that span's trace, or, for a
  case read from traces (``metadata.trace_id`` and ``metadata.span_id``), in the source span's
  context: same trace id, parented to the model call it judges:
  ``gen_ai.evaluation.name`` (the scorer), ``gen_ai.evaluation.score.value``,
  ``gen_ai.evaluation.score.label`` (the scorer's label, else ``pass`` / ``fail`` against its
  threshold), ``gen_ai.evaluation.explanation`` (a judge's reasoning), ``error.type`` for a
  scorer error, and ``evalyard.case.id`` / ``evalyard.run.id`` to find the case again.

Everything is read back from the database after the run, results in chunks of ``CHUNK`` sent
before the next chunk is read, so memory stays flat for a run of millions of results. The
OpenTelemetry SDK is imported here only, and only when a run asks for it (``evalyard[otel]``).
Nothing is registered globally: the providers live for one export.

A failing endpoint never changes a run: ``export_run`` returns a one-line warning instead.
"""

from __future__ import annotations

import logging
import re
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    from .store import Store

EVENT_NAME = "gen_ai.evaluation.result"
SPAN_NAME = "evalyard.run"
#: results per round trip: read from the database, emitted, sent and acknowledged before the next
CHUNK = 1000
#: seconds an export may take, retries included, before the endpoint counts as failing
TIMEOUT_S = 10.0
DEFAULT_ENDPOINT = "http://localhost:4318"
INSTALL_HINT = "--otel needs OpenTelemetry: pip install 'evalyard[otel]'"

_OS_ERROR = re.compile(r"\[Errno -?\d+\] ([^\"')\]]+)")
_EXCEPTION_NAME = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Timeout)):")


def available() -> bool:
    """Whether the SDK and the OTLP/HTTP exporter are installed, without importing them."""
    from importlib.util import find_spec

    try:
        return all(find_spec(name) is not None for name in
                   ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http"))
    except ModuleNotFoundError:
        return False


def signal_url(endpoint: str, signal: str) -> str:
    """OTLP/HTTP's rule for a base endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT``): each signal is
    sent to ``<base>/v1/<signal>``."""
    return f"{endpoint.rstrip('/')}/v1/{signal}"


def evaluation_attributes(scorer: str, value: float | None, label: str | None, passed: bool | None,
                          details: dict[str, Any] | None, error: str | None) -> dict[str, Any]:
    """The ``gen_ai.evaluation.result`` attributes of one stored result."""
    attributes: dict[str, Any] = {"gen_ai.evaluation.name": scorer}
    if value is not None:
        attributes["gen_ai.evaluation.score.value"] = float(value)
    if label is None and passed is not None:
        label = "pass" if passed else "fail"  # the conventions' own example labels
    if label is not None:
        attributes["gen_ai.evaluation.score.label"] = str(label)
    explanation = next((details[k] for k in ("reasoning", "explanation", "reason")
                        if isinstance((details or {}).get(k), str) and details[k]), None)
    if explanation is not None:
        attributes["gen_ai.evaluation.explanation"] = explanation
    if error is not None:
        match = _EXCEPTION_NAME.match(error)
        # error.type is low-cardinality: an exception's name where the message starts with one,
        # else the conventions' fallback; the message itself goes alongside.
        attributes["error.type"] = match.group(1) if match else "_OTHER"
        attributes["evalyard.error"] = error
    return attributes


def run_attributes(run: Any, suite: str, results: int) -> dict[str, Any]:
    """The run span's attributes: the run, and each scorer's statistics from the stored totals."""
    attributes: dict[str, Any] = {"evalyard.run.id": run.id, "evalyard.run.status": run.status,
                                  "evalyard.suite.name": suite, "evalyard.run.results": results}
    if run.name:
        attributes["evalyard.run.name"] = run.name
    for name, summary in ((run.totals or {}).get("scorers") or {}).items():
        prefix = f"evalyard.scorer.{name}"
        for key in ("mean", "std", "pass_rate"):
            if summary.get(key) is not None:
                attributes[f"{prefix}.{key}"] = float(summary[key])
        for key in ("count", "errors"):
            if summary.get(key) is not None:
                attributes[f"{prefix}.{key}"] = int(summary[key])
        ci = summary.get("ci95")
        if ci:
            attributes[f"{prefix}.ci95.lower"], attributes[f"{prefix}.ci95.upper"] = float(ci[0]), float(ci[1])
    return attributes


def _chunks(store: "Store", run_id: str, size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for row in store.results(run_id):
        chunk.append(row)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _nanoseconds(moment: datetime | None) -> int | None:
    if moment is None:
        return None
    if moment.tzinfo is None:  # stored as UTC without a zone (SQLite)
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1_000_000_000)


class _Quiet(logging.Handler):
    """Keeps what the SDK logs during an export (its retries, its failures) for the one-line
    warning, instead of letting Python print each of them on stderr."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage().splitlines()[0] if record.getMessage() else "")


def export_run(store: "Store", run_id: str, endpoint: str | None = None, *, chunk: int = CHUNK,
               timeout: float | None = None) -> str | None:
    """Send run ``run_id``'s span and one evaluation event per result to ``endpoint`` (an OTLP/HTTP
    base URL; default ``http://localhost:4318``). Returns None when everything was accepted, else
    a one-line warning saying how far it got."""
    if not available():
        return INSTALL_HINT
    endpoint = endpoint or DEFAULT_ENDPOINT
    timeout = timeout or TIMEOUT_S
    sdk_logger = logging.getLogger("opentelemetry")
    quiet, propagate = _Quiet(), sdk_logger.propagate
    sdk_logger.addHandler(quiet)
    sdk_logger.propagate = False
    try:
        sent = _export(store, run_id, endpoint, chunk, timeout)
    except Exception as exc:  # noqa: BLE001 - telemetry must never fail a run
        return f"warning: OpenTelemetry export to {endpoint} failed: {type(exc).__name__}: {exc}".splitlines()[0]
    finally:
        sdk_logger.removeHandler(quiet)
        sdk_logger.propagate = propagate
    if sent is None:
        return None
    done, total, what = sent
    reason = quiet.messages[-1] if quiet.messages else "the endpoint refused it"
    cause = next((found.group(1) for text in quiet.messages if (found := _OS_ERROR.search(text))), None)
    if cause and cause not in reason:  # the SDK's last word is "timeout, max retries"; say why too
        reason = f"{reason} ({cause})"
    where = (f"after the run's span and {done} of {total} evaluation events" if what == "events"
             else f"on the run's span (none of {total} evaluation events sent)")
    return f"warning: OpenTelemetry export to {endpoint} failed {where}: {reason}"


def _export(store: "Store", run_id: str, endpoint: str, chunk: int, timeout: float) -> tuple[int, int, str] | None:
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from .store.reading import source_spans
    from .version import __version__

    run = store.get_run(run_id)
    total = store.result_count(run.id)
    resource = Resource.create({"service.version": __version__})
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        # evalyard unless the user named the service (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES)
        resource = resource.merge(Resource({"service.name": "evalyard"}))
    logs = _Watched(OTLPLogExporter(endpoint=signal_url(endpoint, "logs"), timeout=timeout))
    spans = _Watched(OTLPSpanExporter(endpoint=signal_url(endpoint, "traces"), timeout=timeout))
    # The queue holds a whole chunk, and each chunk is flushed before the next is read: nothing is
    # dropped for a full queue, and at most one chunk is in memory.
    log_provider = LoggerProvider(resource=resource)
    log_provider.add_log_record_processor(BatchLogRecordProcessor(
        logs, max_queue_size=max(chunk, 512) * 2, max_export_batch_size=min(chunk, 512),
        export_timeout_millis=int(timeout * 1000)))
    trace_provider = TracerProvider(resource=resource)
    trace_provider.add_span_processor(SimpleSpanProcessor(spans))
    try:
        # The span first: it is the summary a traces-only backend still shows when it refuses the
        # events, and an unreachable endpoint is found with one request, not one per chunk. Its
        # times and statistics are the stored run's, so it can end before the events are sent;
        # the events still carry its trace and span ids.
        span = trace_provider.get_tracer("evalyard").start_span(
            SPAN_NAME, start_time=_nanoseconds(run.created_at), kind=trace.SpanKind.INTERNAL,
            attributes=run_attributes(run, store.suite_of(run).name, total))
        if run.status != "completed":
            span.set_status(trace.Status(trace.StatusCode.ERROR, f"run {run.status}"))
        span.end(end_time=_nanoseconds(run.finished_at))
        if spans.failed:
            return 0, total, "span"
        run_context = trace.set_span_in_context(span)
        logger = log_provider.get_logger("evalyard")
        done = 0
        for rows in _chunks(store, run.id, chunk):
            sources = source_spans(store, run, [row.case_id for row in rows])
            for row in rows:
                attributes = evaluation_attributes(row.scorer, row.value, row.label, row.passed, row.details,
                                                   row.error)
                attributes.update({"evalyard.case.id": row.case_id, "evalyard.run.id": run.id})
                source = source_context(*sources[row.case_id]) if row.case_id in sources else None
                logger.emit(timestamp=_nanoseconds(row.created_at), event_name=EVENT_NAME, attributes=attributes,
                            context=source or run_context)
            log_provider.force_flush(int(timeout * 1000) * 2)
            if logs.failed:  # stop at the first refusal: the endpoint will not take the rest either
                return done, total, "events"
            done += len(rows)
        return None
    finally:
        log_provider.shutdown()
        trace_provider.shutdown()


def source_context(trace_id: str, span_id: str) -> Any:
    """The context of a case's source span (its ``metadata.trace_id`` / ``span_id``, hex), so its
    evaluation events sit in the application's trace beside the model call they judge; the run's
    None when the ids are not valid (the event then stays in the run's trace)."""
    from opentelemetry import trace

    try:
        span_context = trace.SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=True,
                                         trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED))
    except ValueError:
        return None
    return trace.set_span_in_context(trace.NonRecordingSpan(span_context)) if span_context.is_valid else None


class _Watched:
    """An exporter that remembers whether any export failed (the SDK's processors only log it)."""

    def __init__(self, exporter: Any) -> None:
        self.exporter = exporter
        self.failed = False

    def export(self, batch):
        result = self.exporter.export(batch)
        if getattr(result, "name", "SUCCESS") != "SUCCESS":
            self.failed = True
        return result

    def shutdown(self) -> None:
        self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.exporter.force_flush(timeout_millis)
