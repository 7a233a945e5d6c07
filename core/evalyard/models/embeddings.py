"""Embeddings by model name (``openai/text-embedding-3-small``, any litellm embeddings model),
through the model layer's response cache, retries, limits and usage, as chat calls are.

``await embed(layer, model, texts)`` sends the texts in one ``litellm.aembedding`` request and
returns their vectors, in order, with the call as a :class:`Completion` (its usage: prompt
tokens, cost where litellm prices the model, ``cached`` when the response cache answered). The
cache key is the model and the texts (``messages`` of role ``input``), so a rerun asks nothing.
A suite's ``models:`` settings (``api_base``, ``api_key_env``, ``timeout``) apply as for chat.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import ModelCallError
from .keys import cache_key, key_inputs
from .records import CallRecord, CallUsage, Completion

if TYPE_CHECKING:
    from .layer import ModelLayer

#: What the cache key's parameters say, so an embedding never shares a key with a chat call.
KEY_PARAMS = {"endpoint": "embeddings"}


async def embed(layer: ModelLayer, model: str, texts: list[str]) -> tuple[list[list[float]], Completion]:
    """The vectors of ``texts`` (one request), and the call. Raises :class:`ModelCallError`
    once retries are spent (or for a reply without one vector per text)."""
    messages = [{"role": "input", "content": text} for text in texts]
    key = cache_key(model, messages, KEY_PARAMS)
    inputs = key_inputs(model, messages, KEY_PARAMS)
    if layer.use_cache:
        record = await layer._cache_get(key)
        if record is not None:
            completion = _completion(model, key, record.usage, cached=True)
            layer.usage.record(completion)
            return record.response["vectors"], completion
    vectors, usage, attempts, latency_ms = await _call_with_retries(layer, model, texts)
    completion = _completion(model, key, usage, attempts=attempts, latency_ms=latency_ms)
    completion.key_inputs = inputs
    layer.usage.record(completion)
    if layer.use_cache:
        await layer._cache_put(key, CallRecord(model=model, request=inputs, response={"vectors": vectors},
                                               usage=usage, latency_ms=latency_ms))
    return vectors, completion


def _completion(model: str, key: str, usage: dict[str, Any] | None, *, cached: bool = False, attempts: int = 1,
                latency_ms: float | None = None) -> Completion:
    return Completion(model=model, text="", key=key, usage=CallUsage.from_dict(usage), latency_ms=latency_ms,
                      cached=cached, attempts=0 if cached else attempts)


async def _call_with_retries(layer: ModelLayer, model: str, texts: list[str]
                             ) -> tuple[list[list[float]], dict[str, Any], int, float]:
    """One ``aembedding`` request, sent and retried as the layer sends chat calls."""
    from .providers import cost_of

    settings = layer.settings_for(model)
    timeout = settings.timeout or layer.timeout
    kwargs = layer._connection_kwargs(model, settings, timeout, None)
    kwargs.pop("num_retries", None)  # aembedding takes max_retries only
    response, latency_ms, attempt = await layer.send_with_retries(
        model, lambda: layer.litellm.aembedding(model=model, input=texts, **kwargs), timeout)
    vectors = [list(map(float, _field(item, "embedding"))) for item in sorted(response.data, key=_index)]
    if len(vectors) != len(texts):
        raise ModelCallError(f"{model} gave {len(vectors)} embeddings for {len(texts)} texts", model=model,
                             status=None, attempts=attempt, retryable=False)
    tokens = getattr(getattr(response, "usage", None), "prompt_tokens", None)
    usage = CallUsage(prompt_tokens=tokens, cost=cost_of(layer.litellm, response, model)).to_dict()
    return vectors, usage, attempt, latency_ms


def _field(item: Any, name: str) -> Any:
    return item[name] if isinstance(item, dict) else getattr(item, name)


def _index(item: Any) -> int:
    return _field(item, "index")
