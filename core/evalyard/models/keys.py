"""The response-cache key.

A cached answer is reused only for the same question, so the key covers everything
that changes what the model is asked:

- ``model``: the model string as given (``openai/gpt-4o-mini``);
- ``messages``: the full message list (roles and contents) sent;
- ``params``: every request parameter that reaches the provider (temperature,
  max_tokens, response_format, logprobs, top_logprobs, seed, ...);
- ``sample``: the sample index, so ``samples=n`` makes n distinct calls and a rerun
  reuses each of them;
- ``epoch``: the trial of a run with ``--epochs N`` (``evalyard.models.trial``), present only
  past the first, so the keys of a single-epoch run are what they always were.

Connection settings (``api_base``, ``api_key``, ``timeout``, retry settings) are not in
the key: they say how to reach the model, not what it is asked. The key is the
SHA-256 of the canonical JSON of :func:`key_inputs` (sorted keys, no whitespace).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

#: Parameters that do not change the answer and so stay out of the key.
TRANSPORT_PARAMS = frozenset({
    "api_base", "base_url", "api_key", "api_version", "timeout", "num_retries", "max_retries",
    "metadata", "extra_headers", "organization", "stream_timeout",
})

KEY_VERSION = 1


def key_inputs(model: str, messages: list[dict[str, Any]], params: dict[str, Any] | None = None,
               sample: int = 0, epoch: int = 0) -> dict[str, Any]:
    """The exact data hashed into the cache key (what ``--verbose`` shows)."""
    kept = {k: v for k, v in sorted((params or {}).items()) if k not in TRANSPORT_PARAMS and v is not None}
    inputs = {"v": KEY_VERSION, "model": model, "messages": messages, "params": kept, "sample": sample}
    if epoch:
        inputs["epoch"] = epoch
    return inputs


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def cache_key(model: str, messages: list[dict[str, Any]], params: dict[str, Any] | None = None,
              sample: int = 0, epoch: int = 0) -> str:
    return hashlib.sha256(canonical_json(key_inputs(model, messages, params, sample, epoch)).encode()).hexdigest()
