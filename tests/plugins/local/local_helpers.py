"""Shared by the local-model tests (a uniquely named module: conftest modules share one name)."""

from __future__ import annotations

from evalyard import Application

import math
from typing import Any

SMOL = "local/smollm2-135m"
QWEN = "local/qwen2.5-coder-1.5b"

#: What the model layer assumes for local models: the provider says so itself (``capabilities()``);
#: the tests also spell it out, so a layer made outside a run (``layer_for``) is set up the same.
LOCAL_SETTINGS = {"supports_schema": True, "supports_logprobs": True, "concurrency": 1}


def layer_for(*models: str) -> Any:
    """A model layer outside any run: loading the plugin registers the ``local/`` provider."""
    import evalyard_local.plugin  # noqa: F401
    from evalyard.models import ModelSettings

    return Application().model_layer(settings={m: ModelSettings(**LOCAL_SETTINGS) for m in models}, judge_model=models[0])


def prompt_scorer(layer: Any, template: str, **options: Any) -> Any:
    from evalyard.prompting.library import PromptLibrary
    from evalyard.prompting.scorer import register_prompt_scorer

    scorer = register_prompt_scorer(f"local_test_{template}", template=template, **options)()
    scorer.models = layer
    scorer.prompts = PromptLibrary()
    return scorer


def answer_probability(logprobs: list[dict[str, Any]], answer_key: str = "answer") -> tuple[str, float]:
    """The first token of the value after ``"<answer_key>":`` in a JSON reply, with its probability."""
    text = ""
    marker = f'"{answer_key}"'
    for entry in logprobs:
        before = text
        text += entry["token"]
        if marker in before and ":" in before.split(marker, 1)[1] and entry["token"].strip(' "\n'):
            return entry["token"], math.exp(entry["logprob"])
    raise AssertionError(f"no {answer_key!r} value among the reply's tokens: {text!r}")
