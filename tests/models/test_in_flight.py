"""Identical requests in flight are one call: a request made while an identical one (same cache
key: model, messages, parameters, sample, epoch) is on its way waits for that call's answer, so
what a run pays is what ``--plan`` forecast. Real layers: litellm's openai/ provider against the
fake OpenAI server, which counts the requests it gets."""

from __future__ import annotations

import asyncio
import json

import pytest
from click.testing import CliRunner
from model_helpers import user

import evalyard
from evalyard.cli import cli
from evalyard.models import ModelCallError, ModelLayer, ModelSettings, RetryPolicy
from evalyard.models.background import shared_loop
from testutil import write


def invoke(app, *args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj=app, catch_exceptions=False)


def test_a_grid_with_repeated_inputs_makes_the_calls_the_plan_forecast(tmp_path, fake_server, isolated_home):
    """2 models x 2 epochs over 30 cases with 3 distinct inputs: 12 distinct requests, all sent
    at once (-j 16); without coalescing every duplicate in flight reached the provider."""
    server = fake_server(latency_ms=300, reply="Paris")
    app = evalyard.Application()
    write(tmp_path / "cases.jsonl", "".join(
        json.dumps({"id": f"c{i}", "input": f"What is the capital of country {i % 3}?", "reference": "Paris"}) + "\n"
        for i in range(30)))
    suite = write(tmp_path / "suite.yaml", (
        "name: repeated\ndata: cases.jsonl\nscorers: [contains]\nmodels:\n"
        f"  openai/one: {{api_base: '{server.base_url}'}}\n  openai/two: {{api_base: '{server.base_url}'}}\n"))
    args = (suite, "-m", "openai/one", "-m", "openai/two", "--epochs", "2", "-j", "16")
    planned = invoke(app, "run", *args, "--plan", "--json")
    assert planned.exit_code == 0, planned.output
    forecast = sum(model["calls"] - model["cache_hits"]
                   for cell in json.loads(planned.stdout)["plan"]["cells"] for line in cell["forecast"]["lines"]
                   if line["kind"] == "generator" for model in line["models"])
    ran = invoke(app, "run", *args, "--json")
    assert ran.exit_code == 0, ran.output
    cells = json.loads(ran.stdout)["comparison"]["cells"]
    assert [c["scorers"]["contains"]["mean"] for c in cells] == [1.0, 1.0]
    assert forecast == 12 and server.stats.requests == forecast


@pytest.fixture
def layer_at(fake_server):
    layers = []

    def make(**config):
        server = fake_server(**config)
        layer = ModelLayer(settings={"openai/fake": ModelSettings(api_base=server.base_url)},
                           retry=RetryPolicy(max_attempts=1), timeout=5, seed=1)
        layers.append(layer)
        return server, layer

    yield make
    for layer in layers:
        layer.close()


def test_waiters_share_the_one_calls_answer_and_its_usage_is_counted_once(layer_at):
    server, layer = layer_at(latency_ms=200, reply="yes")

    async def three():
        return await asyncio.gather(*(layer.complete("openai/fake", user("Same question?")) for _ in range(3)))

    answers = shared_loop().run(three())
    assert [a.text for a in answers] == ["yes"] * 3 and server.stats.requests == 1
    assert sorted(a.cached for a in answers) == [False, True, True]  # the two that waited: as cache hits
    usage = layer.usage.to_dict()
    assert (usage["calls"], usage["cache_hits"], usage["requests"]) == (3, 2, 1)


def test_the_calls_error_reaches_every_waiter(layer_at):
    server, layer = layer_at(latency_ms=200, fault_rate=1.0, faults=("500",))

    async def three():
        return await asyncio.gather(*(layer.complete("openai/fake", user("Same question?")) for _ in range(3)),
                                    return_exceptions=True)

    outcomes = shared_loop().run(three())
    assert all(isinstance(o, ModelCallError) for o in outcomes) and server.stats.requests == 1
    assert len({str(o) for o in outcomes}) == 1  # the same error, not three of their own


def test_a_cancelled_waiter_does_not_cancel_the_others(layer_at):
    server, layer = layer_at(latency_ms=300, reply="yes")

    async def scene():
        first, second, third = (asyncio.ensure_future(layer.complete("openai/fake", user("Same question?")))
                                for _ in range(3))
        await asyncio.sleep(0.1)
        first.cancel()  # the one whose call it is
        second_answer, third_answer = await asyncio.gather(second, third)
        with pytest.raises(asyncio.CancelledError):
            await first
        return second_answer, third_answer

    answers = shared_loop().run(scene())
    assert [a.text for a in answers] == ["yes", "yes"] and server.stats.requests == 1
