"""litellm, imported only when a model is first called, and set up to stay offline.

Importing litellm is slow and, unless told otherwise, fetches the price map from the
network; so nothing imports it at module level. :func:`load_litellm` sets
``LITELLM_LOCAL_MODEL_COST_MAP`` before the import (the bundled price map is used),
silences litellm's debug banners, and registers our custom providers
(``scripted/PATH`` and any added with :func:`add_custom_provider`).
"""

from __future__ import annotations

import os
import threading
from typing import Any

_lock = threading.Lock()
_pending: dict[str, Any] = {}


def add_custom_provider(name: str, handler: Any) -> None:
    """Route ``name/...`` model strings to ``handler`` (a ``litellm.CustomLLM``).

    Takes effect on the next call; when litellm is not imported yet it is registered
    at import, so adding a provider costs nothing until a model is called.
    """
    with _lock:
        _pending[name] = handler
        import sys

        if "litellm" in sys.modules:
            _install(sys.modules["litellm"])


def capabilities(model: str) -> dict[str, Any]:
    """What one of our custom providers says about a model: ``supports_schema``,
    ``supports_logprobs``, ``concurrency`` (what its runtime can run at once). Empty for others:
    litellm knows those, and a suite's ``models:`` settings override either."""
    handler = _pending.get(model.split("/", 1)[0])
    ask = getattr(handler, "capabilities", None)
    if ask is None:
        return {}
    try:
        return dict(ask(model) or {})
    except Exception:  # a provider that cannot tell (e.g. no such model) says nothing
        return {}


def is_custom(model: str) -> bool:
    """Whether ``model`` goes to one of our custom providers (``scripted/...`` and added ones)."""
    return model.split("/", 1)[0] in _pending or model.startswith("scripted/")


def _install(litellm: Any) -> None:
    existing = {entry["provider"]: entry for entry in (litellm.custom_provider_map or [])}
    for name, handler in _pending.items():
        existing[name] = {"provider": name, "custom_handler": handler}
    litellm.custom_provider_map = list(existing.values())
    from litellm.utils import custom_llm_setup

    custom_llm_setup()


def load_litellm() -> Any:
    """The litellm module, imported and configured on first use."""
    import sys

    module = sys.modules.get("litellm")
    if module is not None and getattr(module, "_evalyard_ready", False):
        return module
    with _lock:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.suppress_debug_info = True
        litellm.telemetry = False
        if "scripted" not in _pending:
            from ..testing.scripted import ScriptedModel

            _pending["scripted"] = ScriptedModel()
        _install(litellm)
        litellm._evalyard_ready = True
        return litellm


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


def supports_logprobs(litellm: Any, model: str) -> bool | None:
    """Whether litellm passes ``logprobs`` for this model; None when it cannot tell."""
    try:
        provider = litellm.get_llm_provider(model)[1]
        params = litellm.get_supported_openai_params(model=model, custom_llm_provider=provider)
    except Exception:
        return None
    if params is None:
        return None
    return "logprobs" in params
