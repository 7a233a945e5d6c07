"""Embeddings by model name (``evalyard.embed``) through litellm and the model layer, against the
fake server's ``/v1/embeddings``: the vectors it gives, one request for all texts, usage, the
response cache, the model's settings, and a failure as a ModelCallError."""

from __future__ import annotations

import pytest


def test_embed_returns_the_servers_vectors_and_caches_them(layer, run, fake_server):
    from evalyard import embed
    from evalyard.models import ModelSettings
    from evalyard.testing.fake_openai import embedding_of

    server = fake_server()
    layer.settings["openai/fake-embed"] = ModelSettings(api_base=server.base_url)
    texts = ["What is the capital of Norway?", "Oslo", ""]
    vectors, call = run(embed(layer, "openai/fake-embed", texts))
    assert vectors == [embedding_of(t) for t in texts]
    assert server.stats.embedding_requests == 1 and server.stats.embedded == texts  # one request for all
    assert not call.cached and call.usage.prompt_tokens == 8  # words, at least 1 a text
    again, cached = run(embed(layer, "openai/fake-embed", texts))
    assert again == vectors and cached.cached and server.stats.embedding_requests == 1
    assert layer.usage.calls == 2 and layer.usage.cache_hits == 1
    other, _ = run(embed(layer, "openai/fake-embed", texts[:2]))  # other texts: another request
    assert other == vectors[:2] and server.stats.embedding_requests == 2
    assert server.stats.requests == 0  # no chat request


def test_texts_sharing_words_are_closer():
    from evalyard.testing.fake_openai import EMBEDDING_DIMENSIONS, embedding_of

    def cos(a, b):
        dot = sum(x * y for x, y in zip(a, b))
        return dot / (sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5)

    q = embedding_of("What is the capital of Norway?")
    assert len(q) == EMBEDDING_DIMENSIONS and all(float(x).is_integer() for x in q)
    assert cos(q, embedding_of("Which city is the capital of Norway?")) > cos(q, embedding_of("Who wrote Peer Gynt?"))
    assert embedding_of("???") == [0.0] * EMBEDDING_DIMENSIONS


def test_a_failed_embeddings_call_is_a_model_call_error(layer, run):
    from evalyard import ModelCallError, embed
    from evalyard.models import ModelSettings

    layer.settings["openai/fake-embed"] = ModelSettings(api_base="http://127.0.0.1:9/v1", timeout=2)
    with pytest.raises(ModelCallError):
        run(embed(layer, "openai/fake-embed", ["a text"]))
