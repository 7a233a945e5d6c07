"""examples/judges.yaml end to end: with the scripted judge through the CLI, and once through
litellm's `openai/` provider against the fake OpenAI-compatible server."""

from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from evalyard.cli import cli
from testutil import ROOT

SUITE = ROOT / "examples" / "judges.yaml"
RULES = ROOT / "examples" / "judges_rules.jsonl"


def invoke(app, *args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj=app, catch_exceptions=False)


def test_every_judge_runs_on_the_example_with_the_scripted_judge(app):
    result = invoke(app, "run", SUITE, "--judge-model", f"scripted/{RULES}", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    scorers = data["scorers"]
    assert len(scorers) == 16 and all(s["count"] == 5 and s["errors"] == 0 for s in scorers.values())
    assert scorers["judge/hallucination"]["labels"] == {"hallucination": 2, "no_hallucination": 3}
    assert scorers["summary_quality"]["labels"] == {"equal": 3, "reference": 2}
    assert scorers["qa_correctness"]["labels"] == {"correct": 3, "incorrect": 2}
    assert scorers["criteria/harmfulness"]["pass_rate"] == 1.0 and scorers["criteria/depth"]["pass_rate"] == 0.0
    rows = {(r["case_id"], r["scorer"]): r for r in map(json.loads, invoke(app, "runs", "export", data["run_id"])
                                                         .output.splitlines())}
    invented = rows[("bridge-invented-cost", "judge/hallucination")]["details"]
    assert invented["unsupported_share"] == 1 / 3
    assert [c["claim"] for c in invented["claims"] if not c["supported"]] == ["The bridge costs 2 billion euros."]
    summary = rows[("museum-verbose", "summarization_score")]
    assert summary["details"]["qa_score"] == 1.0 and summary["value"] < 0.6  # long summary: small conciseness
    assert rows[("bridge-invented-cost", "summary_quality")]["details"]["agreement"] is True


def test_the_example_through_litellm_openai_provider_and_the_fake_server(app, tmp_path):
    from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig

    server = FakeOpenAIServer(FakeServerConfig(seed=5)).start()
    try:
        suite = yaml.safe_load(SUITE.read_text())
        suite["data"] = str(ROOT / "examples" / suite["data"])
        # The fake server fills JSON schemas, so every judge asks for structured answers here.
        suite["scorers"] = [{"name": s if isinstance(s, str) else s["name"], "config": {"structured": True}}
                            for s in suite["scorers"]]
        suite["models"] = {"openai/fake-judge": {"api_base": server.base_url, "supports_schema": True}}
        path = tmp_path / "judges-fake-server.yaml"
        path.write_text(yaml.safe_dump(suite, sort_keys=False))
        result = invoke(app, "run", path, "--judge-model", "openai/fake-judge", "--json")
    finally:
        server.stop()
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert all(s["count"] == 5 and s["errors"] == 0 for s in data["scorers"].values()), data["scorers"]
    usage = data["usage"]
    assert server.stats.answered == usage["calls"] - usage["cache_hits"] and usage["calls"] > 16 * 5
