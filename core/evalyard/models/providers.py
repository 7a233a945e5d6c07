"""Model providers of our own, and litellm, imported only when a model is first called.

A provider is a litellm custom handler (``completion`` / ``acompletion``, duck-typed: no
subclass of ``litellm.CustomLLM`` needed) behind the model strings ``NAME/...``. Plugins
register them with the ``register_model_providers`` hook, and a Python caller with
``Application.add_model_provider``; each application's registry holds its own.

litellm finds a custom provider only in its process-wide ``custom_provider_map`` and has no
per-call handler argument (litellm 1.x, ``main.py``: ``_complete_custom_providers`` looks the
prefix up there). So for each prefix the map holds one :class:`Dispatch`, installed once and
never re-pointed, which holds no handler: the model layer making the call hands its own
application's handler through a context variable (:func:`calling`), which the call's task (and
litellm's worker thread, which runs in a copy of the caller's context) sees and no other call
does. Two applications in one process, interleaved on one event loop, each reach their own.

Importing litellm is slow and, unless told otherwise, fetches the price map from the network;
so nothing imports it at module level. :func:`load_litellm` sets
``LITELLM_LOCAL_MODEL_COST_MAP`` before the import (the bundled price map is used) and silences
litellm's debug banners.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from typing import Any, Iterator

_lock = threading.Lock()
#: The providers of the model layer whose call is running in this context (prefix -> handler).
_calling: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("evalyard_providers",
                                                                                   default=None)


def check_provider(name: Any, handler: Any, who: str) -> None:
    """A provider's name is a model-string prefix; a handler must answer calls."""
    from ..errors import PluginError

    if not isinstance(name, str) or not name or "/" in name:
        raise PluginError(f"{who}: a model provider's name is the prefix of its model strings "
                          f"(e.g. 'local' for local/...), without '/'; got {name!r}")
    if handler is not None and not any(callable(getattr(handler, method, None)) for method in ("completion", "acompletion")):
        raise PluginError(f"{who}: model provider {name!r} has neither completion() nor acompletion(): "
                          "expected a litellm custom handler")


class Dispatch:
    """litellm's custom handler for one prefix: forwards each call to the handler of the model
    layer making it (from the call's context); it holds no handler of its own."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def _handler(self) -> Any:
        handler = (_calling.get() or {}).get(self.prefix)
        if handler is None:  # the model layer refuses such a call before it reaches litellm
            raise RuntimeError(f"no provider for {self.prefix}/ models in the calling application")
        return handler

    def completion(self, *args: Any, **kwargs: Any) -> Any:
        return self._handler().completion(*args, **kwargs)

    async def acompletion(self, *args: Any, **kwargs: Any) -> Any:
        handler = self._handler()
        if not callable(getattr(handler, "acompletion", None)):  # a sync-only handler
            import asyncio

            return await asyncio.to_thread(handler.completion, *args, **kwargs)
        return await handler.acompletion(*args, **kwargs)

    def streaming(self, *args: Any, **kwargs: Any) -> Any:
        return self._handler().streaming(*args, **kwargs)

    def astreaming(self, *args: Any, **kwargs: Any) -> Any:  # what the handler returns, unchanged
        return self._handler().astreaming(*args, **kwargs)


def install(litellm: Any, prefix: str) -> None:
    """Make litellm send ``prefix/...`` model strings to our :class:`Dispatch` (once per prefix:
    ``custom_provider_map`` is litellm's documented way to add a provider)."""
    if dispatched(litellm, prefix):
        return
    with _lock:
        entries = [e for e in (litellm.custom_provider_map or []) if e.get("provider") != prefix]
        litellm.custom_provider_map = [*entries, {"provider": prefix, "custom_handler": Dispatch(prefix)}]
        from litellm.utils import custom_llm_setup

        custom_llm_setup()


def dispatched(litellm: Any, prefix: str) -> bool:
    """Whether litellm sends ``prefix/...`` to a provider of ours (some application's)."""
    return any(isinstance(e.get("custom_handler"), Dispatch) and e.get("provider") == prefix
               for e in litellm.custom_provider_map or [])


@contextlib.contextmanager
def calling(providers: dict[str, Any]) -> Iterator[None]:
    """Within this block, calls made from this context reach ``providers``."""
    token = _calling.set(providers)
    try:
        yield
    finally:
        _calling.reset(token)


def capabilities(handler: Any, model: str) -> dict[str, Any]:
    """What one of our providers says about a model: ``supports_schema``, ``supports_logprobs``,
    ``concurrency`` (what its runtime can run at once), ``reasoning``. Empty when it says nothing:
    litellm knows the others, and a suite's ``models:`` settings override either."""
    ask = getattr(handler, "capabilities", None)
    if ask is None:
        return {}
    try:
        return dict(ask(model) or {})
    except Exception:  # a provider that cannot tell (e.g. no such model) says nothing
        return {}


def load_litellm() -> Any:
    """The litellm module, imported and configured on first use."""
    import sys

    global _litellm_ready
    module = sys.modules.get("litellm")
    if module is not None and _litellm_ready:
        return module
    with _lock:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        # litellm's documented module settings (no private name is touched)
        litellm.suppress_debug_info = True
        litellm.telemetry = False
        _litellm_ready = True
        return litellm


_litellm_ready = False


def cost_of(litellm: Any, response: Any, model: str) -> float | None:
    """The call's cost from litellm's bundled price map; None when the model has no price."""
    hidden = getattr(response, "_hidden_params", None) or {}
    if hidden.get("evalyard_cost") is not None:
        return float(hidden["evalyard_cost"])
    if model in _unpriced:
        return None
    try:
        cost = litellm.completion_cost(completion_response=response, model=model)
    except Exception:  # litellm raises a different error per unknown-model case
        # The bundled price map does not change while the process runs: ask once per model.
        _unpriced.add(model)
        return None
    return None if cost is None else float(cost)


_unpriced: set[str] = set()


def supports_response_schema(litellm: Any, model: str) -> bool:
    try:
        return bool(litellm.supports_response_schema(model=model))
    except Exception:
        return False


def supports_media(litellm: Any, model: str, kind: str) -> bool:
    """Whether litellm's model map says ``model`` takes images (``supports_vision``) or audio
    input (``supports_audio_input``); False for a model it does not know."""
    ask = litellm.supports_vision if kind == "image" else litellm.supports_audio_input
    try:
        return bool(ask(model=model))
    except Exception:
        return False


def supports_logprobs(litellm: Any, model: str) -> bool | None:
    """Whether litellm passes ``logprobs`` for this model; None when it cannot tell."""
    return supports_param(litellm, model, "logprobs")


def supports_param(litellm: Any, model: str, name: str) -> bool | None:
    """Whether litellm passes the OpenAI parameter ``name`` for this model; None when it cannot tell."""
    try:
        provider = litellm.get_llm_provider(model)[1]
        params = litellm.get_supported_openai_params(model=model, custom_llm_provider=provider)
    except Exception:
        return None
    if params is None:
        return None
    return name in params


#: litellm providers whose batch endpoint takes OpenAI's JSONL request format.
BATCH_PROVIDERS = frozenset({"openai", "azure", "hosted_vllm", "litellm_proxy", "mistral", "xai"})


def batchable(model: str) -> bool:
    """Whether ``model``'s calls can go out as provider batch jobs (``run --batch``): asked by the
    model layer (which call joins the batch queue) and the forecast, so it lives here, below both
    the layer and the queue."""
    provider, _, name = model.partition("/")
    return bool(name) and provider in BATCH_PROVIDERS
