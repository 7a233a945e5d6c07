"""Model providers of our own, and litellm, imported only when a model is first called.

A provider is a litellm custom handler (``completion`` / ``acompletion``, duck-typed: no
subclass of ``litellm.CustomLLM`` needed) behind the model strings ``NAME/...``. Plugins
register them with the ``register_model_providers`` hook, so the allow/block lists, tracing and
a test's own plugins decide which providers an application has; :func:`collect` asks the
plugins. litellm keeps one routing table per process, so a model layer routes its own
providers into it before each call (:func:`route`), and refuses a prefix another application
routed but its own plugins do not provide (a blocked plugin's provider stays blocked).

Importing litellm is slow and, unless told otherwise, fetches the price map from the network;
so nothing imports it at module level. :func:`load_litellm` sets
``LITELLM_LOCAL_MODEL_COST_MAP`` before the import (the bundled price map is used) and silences
litellm's debug banners.
"""

from __future__ import annotations

import os
import threading
from typing import Any

_lock = threading.Lock()
#: Added from Python with add_custom_provider: every model layer of the process has them.
_added: dict[str, Any] = {}
#: What litellm's routing table holds for us now: prefix -> handler.
_routed: dict[str, Any] = {}


def add_custom_provider(name: str, handler: Any) -> None:
    """Route ``name/...`` model strings to ``handler`` in every model layer of this process
    (a script or a notebook; it wins over a plugin's provider of the same name).

    A plugin registers its providers with the ``register_model_providers`` hook instead, which
    the plugin allow/block lists and tracing govern. Nothing is imported until a model is called.
    """
    _check(name, None, "add_custom_provider")
    with _lock:
        _added[name] = handler


def added_providers() -> dict[str, Any]:
    return dict(_added)


def _check(name: Any, handler: Any, who: str) -> None:
    """A provider's name is a model-string prefix; a plugin's handler must answer calls."""
    from ..errors import PluginError

    if not isinstance(name, str) or not name or "/" in name:
        raise PluginError(f"{who}: a model provider's name is the prefix of its model strings "
                          f"(e.g. 'local' for local/...), without '/'; got {name!r}")
    if handler is not None and not any(callable(getattr(handler, method, None)) for method in ("completion", "acompletion")):
        raise PluginError(f"{who}: model provider {name!r} has neither completion() nor acompletion(): "
                          "expected a litellm custom handler")


def collect(host: Any) -> dict[str, Any]:
    """The providers the plugins of ``host`` (a ``PluginHost``) register, by model-string prefix,
    with those added through :func:`add_custom_provider` on top. One prefix, one plugin."""
    found = host.collect("register_model_providers", "model provider",
                         check=lambda name, handler, plugin: _check(name, handler, f"plugin {plugin!r}"))
    return {**found, **_added}


def default_providers() -> dict[str, Any]:
    """The providers of the plugins a default application loads (settings from the environment):
    for a model layer made outside any application."""
    from ..plugins import PluginHost
    from ..settings import Settings

    return collect(PluginHost(Settings.from_env()))


def route(litellm: Any, name: str, handler: Any) -> None:
    """Make litellm send ``name/...`` model strings to ``handler`` (a no-op when it does already)."""
    if _routed.get(name) is handler:
        return
    with _lock:
        entries = [entry for entry in (litellm.custom_provider_map or []) if entry.get("provider") != name]
        litellm.custom_provider_map = [*entries, {"provider": name, "custom_handler": handler}]
        _routed[name] = handler
        from litellm.utils import custom_llm_setup

        custom_llm_setup()


def routed_elsewhere(name: str) -> bool:
    """Whether litellm routes ``name/...`` to a provider of ours that some model layer routed."""
    return name in _routed


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

    module = sys.modules.get("litellm")
    if module is not None and getattr(module, "_evalyard_ready", False):
        return module
    with _lock:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.suppress_debug_info = True
        litellm.telemetry = False
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
