"""``evalyard run --otel``: a finished run sent to an OTLP/HTTP endpoint, read back from the
database in chunks: one span with each scorer's mean and 95% CI, one ``gen_ai.evaluation.result``
event per result in the span's trace. Decoded here from the real protobuf requests a local
receiver gets; ``test_otel_collector.py`` sends the same to a real OpenTelemetry Collector."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed: pip install 'evalyard[otel]'")
pytest.importorskip("opentelemetry.proto", reason="opentelemetry-proto is not installed (the test extra has it)")

from otlp_receiver import OTLPReceiver, attributes  # noqa: E402

from evalyard import Application, evaluate, otel  # noqa: E402
from evalyard.cli import cli  # noqa: E402
from evalyard.settings import Settings  # noqa: E402

SCRIPTS = {"a": 1.0, "b": 0.0, "c": "raise", "d": 0.75, "e": 0.25}


@pytest.fixture
def cases(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps({"id": k, "candidate": k, "metadata": {"script": v}}) + "\n"
                            for k, v in SCRIPTS.items()))
    return path


def otel_app(endpoint: str) -> Application:
    import scripted_scorers

    app = Application(Settings.from_env(otel_endpoint=endpoint))
    app.register_plugin(scripted_scorers, name="scripted_scorers")
    return app


def invoke(app, *args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj=app, catch_exceptions=False)


def test_a_run_is_a_span_and_one_evaluation_event_per_result(cases):
    with OTLPReceiver() as receiver:
        app = otel_app(receiver.endpoint)
        result = invoke(app, "run", cases, "-s", "scripted", "--otel", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["scorers"]["scripted"]
    (span,) = receiver.spans()
    run_attributes = attributes(span.attributes)
    assert span.name == "evalyard.run" and run_attributes["evalyard.run.id"] == json.loads(result.stdout)["run_id"]
    assert run_attributes["evalyard.scorer.scripted.mean"] == pytest.approx(summary["mean"])
    assert [run_attributes["evalyard.scorer.scripted.ci95.lower"], run_attributes["evalyard.scorer.scripted.ci95.upper"]] \
        == pytest.approx(summary["ci95"])
    assert run_attributes["evalyard.scorer.scripted.errors"] == 1 and run_attributes["evalyard.run.results"] == 5
    assert span.end_time_unix_nano > span.start_time_unix_nano

    records = receiver.log_records()
    assert len(records) == 5 and {r.event_name for r in records} == {"gen_ai.evaluation.result"}
    assert {(r.trace_id, r.span_id) for r in records} == {(span.trace_id, span.span_id)}  # inside the run's trace
    events = {attributes(r.attributes)["evalyard.case.id"]: attributes(r.attributes) for r in records}
    assert events["a"]["gen_ai.evaluation.name"] == "scripted"
    assert events["a"]["gen_ai.evaluation.score.value"] == 1.0 and events["a"]["gen_ai.evaluation.score.label"] == "high"
    assert events["e"]["gen_ai.evaluation.score.value"] == 0.25 and events["e"]["gen_ai.evaluation.score.label"] == "low"
    assert events["c"]["error.type"] == "ValueError" and "gen_ai.evaluation.score.value" not in events["c"]
    assert events["c"]["evalyard.error"] == "ValueError: scripted failure on c"


def test_results_are_streamed_in_chunks(cases):
    """Each chunk is read, sent and acknowledged before the next is read."""
    with OTLPReceiver() as receiver:
        app = otel_app(receiver.endpoint)
        result = invoke(app, "run", cases, "-s", "scripted", "--json")
        run_id = json.loads(result.stdout)["run_id"]
        assert receiver.requests == []  # no --otel, nothing sent
        assert otel.export_run(app.open_store(), run_id, receiver.endpoint, chunk=2) is None
    sizes = [sum(len(sl.log_records) for rl in r.resource_logs for sl in rl.scope_logs) for r in receiver.log_requests()]
    assert sizes == [2, 2, 1]


@pytest.mark.parametrize("named,service", [(None, "evalyard"), ("nightly-evals", "nightly-evals")])
def test_the_service_is_evalyard_unless_the_user_names_it(cases, monkeypatch, named, service):
    if named:
        monkeypatch.setenv("OTEL_SERVICE_NAME", named)
    with OTLPReceiver() as receiver:
        invoke(otel_app(receiver.endpoint), "run", cases, "-s", "scripted", "--otel")
    resources = [attributes(rl.resource.attributes) for r in receiver.log_requests() for rl in r.resource_logs]
    assert {r["service.name"] for r in resources} == {service} and resources[0]["service.version"]


def test_a_failing_endpoint_is_one_warning_and_changes_nothing(cases, monkeypatch):
    monkeypatch.setattr(otel, "TIMEOUT_S", 2.0)
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    app = otel_app(closed)
    started = time.monotonic()
    result = CliRunner().invoke(cli, ["run", str(cases), "-s", "scripted", "--otel",
                                                      "--fail-under", "scripted=0.9"], obj=app)
    assert result.exit_code == 1  # the --fail-under verdict, as without --otel
    warning = [line for line in result.stderr.splitlines() if "OpenTelemetry" in line]
    assert warning == [line for line in result.stderr.splitlines() if not line.startswith("FAILED")]
    assert len(warning) == 1 and warning[0].startswith(
        f"warning: OpenTelemetry export to {closed} failed on the run's span (none of 5 evaluation events sent)")
    assert warning[0].endswith("(Connection refused)")
    assert time.monotonic() - started < 30
    assert app.open_store().list_runs()[0][0].status == "completed"


def test_a_refusing_endpoint_is_named_in_the_warning(cases):
    with OTLPReceiver(status=400) as receiver:
        app = otel_app(receiver.endpoint)
        result = CliRunner().invoke(cli, ["run", str(cases), "-s", "scripted", "--otel"], obj=app)
    assert result.exit_code == 0
    assert result.stderr.strip().startswith(f"warning: OpenTelemetry export to {receiver.endpoint} failed on the run's")
    assert "code: 400" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert [path for path, _ in receiver.requests] == ["/v1/traces"]  # nothing more after a refusal


def test_a_traces_only_backend_still_gets_the_span(cases):
    """Tracing servers that take no logs (404 on /v1/logs) still show the run and its statistics."""
    with OTLPReceiver(status={"/v1/logs": 404}) as receiver:
        app = otel_app(receiver.endpoint)
        result = CliRunner().invoke(cli, ["run", str(cases), "-s", "scripted", "--otel"], obj=app)
    assert result.exit_code == 0 and len(receiver.spans()) == 1
    assert result.stderr.strip().startswith(f"warning: OpenTelemetry export to {receiver.endpoint} failed after the "
                                            "run's span and 0 of 5 evaluation events: ")


def test_otel_without_the_sdk_is_a_usage_error(cases, monkeypatch):
    monkeypatch.setattr(otel, "available", lambda: False)
    result = invoke(otel_app("http://127.0.0.1:9"), "run", cases, "-s", "scripted", "--otel")
    assert result.exit_code == 2 and "pip install 'evalyard[otel]'" in result.output


def test_the_python_api_sends_a_run_too(cases):
    import scripted_scorers

    app = Application()
    app.register_plugin(scripted_scorers, name="scripted_scorers")
    with OTLPReceiver() as receiver:
        run = evaluate(str(cases), ["scripted"], app=app, otel=receiver.endpoint)
    assert len(receiver.log_records()) == 5
    assert attributes(receiver.spans()[0].attributes)["evalyard.run.id"] == run.run_id


def test_event_attributes_follow_the_conventions():
    judged = otel.evaluation_attributes("criteria/correctness", 0.8, None, True, {"reasoning": "It is right."}, None)
    assert judged == {"gen_ai.evaluation.name": "criteria/correctness", "gen_ai.evaluation.score.value": 0.8,
                      "gen_ai.evaluation.score.label": "pass", "gen_ai.evaluation.explanation": "It is right."}
    assert otel.evaluation_attributes("x", 0.0, None, False, {}, None)["gen_ai.evaluation.score.label"] == "fail"
    failed = otel.evaluation_attributes("x", None, None, None, {}, "judge gave no verdict")
    assert failed["error.type"] == "_OTHER" and "gen_ai.evaluation.score.label" not in failed
    assert otel.signal_url("http://collector:4318/", "logs") == "http://collector:4318/v1/logs"


def test_settings_name_the_endpoint():
    assert Settings.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318"}).otel_endpoint == "http://a:4318"
    assert Settings.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318",
                              "EVALYARD_OTEL_ENDPOINT": "http://b:4318"}).otel_endpoint == "http://b:4318"
    assert Settings.from_env({}).otel_endpoint is None


def test_importing_the_core_and_help_leave_opentelemetry_alone():
    code = ("import sys\nfrom click.testing import CliRunner\nfrom evalyard.cli import cli\nimport evalyard\n"
            "assert CliRunner().invoke(cli, ['run', '--help']).exit_code == 0\n"
            "print([m for m in sys.modules if m.startswith('opentelemetry')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
