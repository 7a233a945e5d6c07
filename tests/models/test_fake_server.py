"""The fake OpenAI server, reached through litellm's ordinary openai/ provider."""

from __future__ import annotations

import subprocess
import sys

from model_helpers import gather_all, user

from evalyard.models import ModelLayer, ModelSettings, RetryPolicy, p_yes


def _layer(server, **settings):
    model = "openai/fake-judge"
    return model, ModelLayer(settings={model: ModelSettings(api_base=server.base_url, **settings)},
                             retry=RetryPolicy(max_attempts=10, base_delay=0.001, max_delay=0.01), timeout=0.5, seed=3)


def test_answers_with_usage_and_logprobs(fake_server, run):
    server = fake_server()
    model, layer = _layer(server)
    completion = run(layer.complete(model, user("Is water wet?"), logprobs=5))
    assert completion.text in ("yes", "no")
    assert completion.usage.prompt_tokens == 3 and completion.usage.completion_tokens == 1
    assert completion.usage.cost is None  # a model litellm has no price for: unknown, not $0
    probability = p_yes(completion.top_logprobs())
    assert probability is not None and (probability > 0.5) == (completion.text == "yes")


def test_a_run_with_thirty_percent_faults_completes(fake_server, run):
    server = fake_server(fault_rate=0.3, faults=("429", "500", "timeout", "malformed"), hang_s=2, seed=7)
    model, layer = _layer(server)
    results = run(gather_all(*(layer.complete(model, user(f"question {n}")) for n in range(40))))
    assert all(r.text in ("yes", "no") for r in results)
    usage = layer.usage.to_dict()
    assert usage["retries"] > 0 and usage["requests"] == usage["calls"] + usage["retries"]
    # every injected fault costs one retry; on a loaded machine a slow answer can also hit the
    # client's timeout and be retried, so the server's count is a lower bound
    assert usage["retries"] >= sum(server.stats.faults.values()) > 0
    assert set(server.stats.faults) <= {"429", "500", "timeout", "malformed"}


def test_faults_are_deterministic_for_a_seed(fake_server, run):
    counts = []
    for _ in range(2):
        server = fake_server(fault_rate=0.5, faults=("500",), seed=11)
        model, layer = _layer(server)
        run(gather_all(*(layer.complete(model, user(f"q{n}")) for n in range(20))))
        counts.append(server.stats.faults["500"])
    assert counts[0] == counts[1] > 0


def test_json_schema_through_response_format(fake_server, run):
    server = fake_server()
    model, layer = _layer(server, supports_schema=True)
    schema = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]},
                                               "score": {"type": "integer", "minimum": 1, "maximum": 5}},
              "required": ["answer", "score"]}
    answer = run(layer.complete_json(model, user("judge this"), schema))
    assert answer.mode == "schema" and answer.value["answer"] in ("yes", "no") and 1 <= answer.value["score"] <= 5


def test_command_line_server_prints_its_port():
    process = subprocess.Popen([sys.executable, "-m", "evalyard.testing.fake_openai", "--port", "0", "--latency-ms", "1"],
                               stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert line.startswith("fake OpenAI server listening on http://127.0.0.1:")
        import json
        import urllib.request

        url = line.split()[-1] + "/chat/completions"
        request = urllib.request.Request(url, data=json.dumps({"messages": user("hi"), "model": "x"}).encode(),
                                         headers={"Content-Type": "application/json"})
        body = json.load(urllib.request.urlopen(request, timeout=5))
        assert body["choices"][0]["message"]["content"] in ("yes", "no") and body["usage"]["total_tokens"] > 0
    finally:
        process.terminate()
        process.wait(5)


def test_bad_fault_name_is_refused():
    result = subprocess.run([sys.executable, "-m", "evalyard.testing.fake_openai", "--faults", "gremlins"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and "unknown fault 'gremlins'" in result.stderr
