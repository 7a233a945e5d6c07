"""Fixtures for the model layer: scripted rule files, a fast-retry layer, the fake server.

Everything goes through the real layers: litellm with the scripted provider, the fake
OpenAI server on 127.0.0.1, real Jinja2.
"""

from __future__ import annotations

from evalyard import Application

import asyncio
import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")



@pytest.fixture
def fast_retry():
    from evalyard.models import RetryPolicy

    return RetryPolicy(max_attempts=6, base_delay=0.001, max_delay=0.01)


@pytest.fixture
def layer(fast_retry):

    layer = Application().model_layer(retry=fast_retry, seed=1)
    yield layer
    layer.close()


@pytest.fixture
def run():
    """Run a coroutine on the model layer's background loop: litellm wants one loop per process."""
    from evalyard.models.background import shared_loop

    loop = shared_loop()

    def run(awaitable):
        if asyncio.iscoroutine(awaitable):
            return loop.run(awaitable)
        raise TypeError("pass a coroutine (wrap gather() in gather_all)")

    return run


@pytest.fixture
def fake_server():
    from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig

    servers = []

    def start(**config):
        server = FakeOpenAIServer(FakeServerConfig(**config)).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
