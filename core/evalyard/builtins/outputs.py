"""The core's output formats, registered through the same hook as any plugin's
(``register_outputs``): the export formats, JUnit, OpenTelemetry, the HTML report and Markdown."""

from __future__ import annotations

from ..hookspecs import hookimpl


def _jsonl(source, target):
    from ..exporting import write_jsonl

    with source.open_text(target) as handle:
        write_jsonl(source.rows(), handle, columns=source.columns)


def _csv(source, target):
    from ..exporting import write_csv

    with source.open_text(target) as handle:
        write_csv(source.rows(), handle, columns=source.columns)


def _parquet(source, target):
    from ..exporting import write_parquet

    with source.open_binary(target) as handle:
        write_parquet(source.rows(), handle, columns=source.columns)


def _parquet_check():
    from ..errors import ConfigError
    from ..exporting import ParquetMissing, parquet_schema

    try:
        parquet_schema()
    except ParquetMissing as exc:
        raise ConfigError(str(exc)) from None


def _junit(source, target):
    from ..junit import run_junit

    tree = run_junit(source.store, source.run_id)
    if target in (None, "-"):
        import sys
        import xml.etree.ElementTree as ET

        sys.stdout.write(ET.tostring(tree.getroot(), encoding="unicode", xml_declaration=True) + "\n")
        return None
    from ..junit import write_junit

    write_junit(source.store, source.run_id, target)
    return None


def _otel(source, target):
    from ..otel import export_run

    return export_run(source.store, source.run_id, target or source.settings.otel_endpoint)


def _otel_check():
    from ..errors import ConfigError
    from ..otel import INSTALL_HINT, available

    if not available():
        raise ConfigError(INSTALL_HINT)


def _html(source, target):
    from pathlib import Path

    from ..report import build_report, static_page_media

    # written to a file, media past the embedding budget go beside it (linked); on standard output
    # there is no beside, so they are left out and the page says so
    media = None if target in (None, "-") else static_page_media(source.store, Path(target))
    html = build_report(source.store, source.run_id, media=media)
    with source.open_text(target) as handle:
        handle.write(html)


def _markdown(source, target):
    from ..markdown import run_markdown
    from ..store.reading import run_statistics

    run, suite = source.run, source.suite()
    scorers, _ = run_statistics(source.store, run)
    summary = {"run_id": run.id, "name": run.name, "status": run.status, "scorers": scorers,
               "suite": {"name": suite.name, "version": suite.version, "cases": suite.case_count}}
    with source.open_text(target) as handle:
        handle.write(run_markdown(summary))


@hookimpl
def register_outputs(register):
    register("jsonl", _jsonl, default_target="evalyard-{run_id}.jsonl", stdout=True,
             trials=True, help="one JSON object per result: case_id, scorer, value, label, passed, details, error "
                               "(with --trials: per case, epoch and scorer, with epoch and output)")
    register("csv", _csv, default_target="evalyard-{run_id}.csv", stdout=True, trials=True,
             help="the same columns as jsonl, details as JSON text")
    register("parquet", _parquet, default_target="evalyard-{run_id}.parquet", stdout=True, check=_parquet_check,
             trials=True, help="the same columns, typed, zstd row groups (needs pyarrow: evalyard[parquet])")
    register("junit", _junit, default_target="evalyard-junit-{run_id}.xml", stdout=True,
             help="JUnit XML for CI: one test case per case x scorer")
    register("otel", _otel, check=_otel_check,
             help="OpenTelemetry over OTLP/HTTP (target: the endpoint, default the configured one): a span "
                  "per run, one gen_ai.evaluation.result event per result")
    register("markdown", _markdown, default_target="evalyard-{run_id}.md", stdout=True,
             help="the run's summary in Markdown, for GitHub's job summary or a pull-request comment (for a "
                  "comparison: compare BASE NEW --format markdown)")
    register("html", _html, default_target="evalyard-report-{run_id}.html", stdout=True,
             help="the self-contained HTML report of the run")
