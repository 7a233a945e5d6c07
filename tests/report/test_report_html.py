"""The report page without a browser: self-contained, safe with hostile text, honest about
what it does not know, and the CLI's errors."""

from __future__ import annotations

import base64
import gzip
import json
import re

import pytest
from click.testing import CliRunner

from evalyard.cli import cli
from evalyard.report import build_report
from evalyard.report.render import data_element
from evalyard.report.synthetic import write_synthetic_run
from evalyard.store import Store


def _data(html: str):
    match = re.search(r'<script type="application/json" id="evalyard-data">(.*?)</script>', html, re.S)
    return json.loads(match.group(1))


@pytest.fixture
def store(tmp_path):
    opened = Store(f"sqlite:///{tmp_path / 'r.db'}")
    yield opened
    opened.close()


def test_page_is_self_contained_and_forbids_the_network(store):
    html = build_report(store, write_synthetic_run(store, 30))
    assert not re.search(r'(src|href|action)="(https?:)?//', html)
    assert "<link rel=\"stylesheet\"" not in html and "<script src" not in html
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    assert "default-src 'none'" in policy and "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
    assert len(_data(html)["cases"]["id"]) == 30


def test_hostile_case_text_cannot_close_the_data_element(store):
    run_id = write_synthetic_run(store, 3)
    evil = '</script><script>alert("x")</script><!--'
    with store.engine.begin() as connection:
        connection.exec_driver_sql("UPDATE candidates SET text = ? WHERE case_id = 'case-00001'", (evil,))
    html = build_report(store, run_id)
    assert evil not in html and html.count("</script>") == 2  # the data element's and the page script's
    assert _data(html)["cases"]["candidate"][1] == evil


def test_large_data_is_gzipped_and_round_trips():
    data = {"cases": {"id": [f"case-{i}" for i in range(50)]}, "text": "x<y & z>" * 40}
    element = data_element(data, compress_above=100)
    packed = re.search(r'data-encoding="gzip-base64">(.*?)</script>', element).group(1)
    assert json.loads(gzip.decompress(base64.b64decode(packed))) == data
    assert "application/json" in data_element(data)


def test_usage_summed_from_results_with_unknown_cost(store):
    html = build_report(store, write_synthetic_run(store, 40))
    tokens = re.search(r'data-field="tokens">([^<]+)<', html).group(1)
    assert re.fullmatch(r"[\d,]+ / [\d,]+", tokens.strip())
    assert re.search(r'data-field="cost">unknown<', html)
    assert 'data-field="models">synthetic-embedder, scripted/judge<' in html


def test_usage_as_the_model_layer_stores_it(store):
    """The run's usage as the model layer records it (prompt/completion tokens, cost or None)."""
    run_id = write_synthetic_run(store, 10)
    totals = dict(store.get_run(run_id).totals or {})
    totals["usage"] = {"calls": 12, "cache_hits": 4, "prompt_tokens": 3000, "completion_tokens": 120, "cost": 0.0125,
                       "cost_complete": True}
    store.set_status(run_id, "completed", totals)
    html = build_report(store, run_id)
    assert re.search(r'data-field="tokens">3,000 / 120<', html)
    assert re.search(r'data-field="cost">\$0.0125<', html)
    totals["usage"]["cost"] = None
    store.set_status(run_id, "completed", totals)
    assert re.search(r'data-field="cost">unknown<', build_report(store, run_id))


def test_interrupted_run_without_totals_still_reports(store):
    run_id = write_synthetic_run(store, 25)
    store.set_status(run_id, "interrupted", {})
    html = build_report(store, run_id)
    assert "status-interrupted" in html
    assert re.search(r'data-scorer="similarity">.*?data-stat="count">25<', html, re.S)
    assert 'data-field="duration">unknown<' in html


def test_report_cli_writes_the_page_and_refuses_unknown_runs(store, tmp_path):
    run_id = write_synthetic_run(store, 5)
    out = tmp_path / "page.html"
    done = CliRunner().invoke(cli, ["report", run_id[:6], "--db", store.url, "-o", str(out)])
    assert done.exit_code == 0, done.output
    assert f"for run {run_id}" in done.output and "<!doctype html>" in out.read_text()
    missing = CliRunner().invoke(cli, ["report", "no-such-run", "--db", store.url, "-o", str(out)])
    assert missing.exit_code == 2 and "no run 'no-such-run'" in missing.output
