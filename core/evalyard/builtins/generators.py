"""The core's candidate generator: a model answers each case, through the model layer.

``evalyard run SUITE --model MODEL [--prompt TEMPLATE]`` fills every case that has no
candidate with the model's answer. Without a template the case's input is the whole user
message; with one, the template is rendered with the case (as judges' templates are).
Generated candidates are cached like any model call and stored with the run, with the
model, the template's hash, the usage and the call's latency.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, InputError
from ..hookspecs import hookimpl
from ..media import MEDIA_KINDS
from ..scoring import Case, Generation, Generator

if TYPE_CHECKING:
    from ..runtime import Runtime


class ModelGenerator(Generator):
    name = "model"
    description = "the candidate is a model's answer to the case (its input, or a rendered prompt template)"
    requires = ("input",)

    @dataclass
    class Config:
        model: str = field(default="", metadata={"help": "the model under test (a litellm model string)"})
        prompt: str | None = field(default=None, metadata={"help": "prompt template to render with each case"})
        temperature: float = field(default=0.0, metadata={"help": "sampling temperature"})
        max_tokens: int | None = field(default=None, metadata={"help": "longest answer, in tokens"})

    runtime: Runtime | None = None

    def setup(self, runtime: Runtime) -> None:
        if not self.config.model:
            raise ConfigError("generator model needs a model: evalyard run SUITE --model MODEL")
        self.runtime = runtime
        if self.config.prompt:
            try:
                template = runtime.prompts.get(self.config.prompt)
            except InputError as exc:
                raise ConfigError(str(exc)) from None
            self._fields = tuple(f for f in template.fields if f not in ("id", "candidate"))

    def required_fields(self) -> tuple[str, ...]:
        return getattr(self, "_fields", None) or tuple(self.requires)

    def fingerprint_data(self) -> dict[str, Any]:
        data = super().fingerprint_data()
        if self.config.prompt and self.runtime is not None:
            data["template_hash"] = self.runtime.prompts.get(self.config.prompt).hash
        return data

    def _request(self, case: Case) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
        """(messages, params, details) of the one call made for ``case``."""
        details: dict[str, Any] = {"model": self.config.model}
        if self.config.prompt:
            template = self.runtime.prompts.get(self.config.prompt)
            messages = template.render_plain(case).messages  # exactly the user's prompt: no judge's guard
            details.update(template=template.name, template_hash=template.hash)
        else:  # the case's input, with its images and audio (named by hash: the layer puts the bytes in)
            messages = [{"role": "user", "content": user_content(case)}]
        params: dict[str, Any] = {"temperature": self.config.temperature}
        if self.config.max_tokens is not None:
            params["max_tokens"] = self.config.max_tokens
        return messages, params, details

    def media_inputs(self) -> tuple[str, ...]:
        # A template renders text: the case's media have no place in it yet (a template field
        # that places them is the hook for that), so only the plain input carries them.
        return () if self.config.prompt else ("image", "audio")

    def media_models(self) -> list[str]:
        return [self.config.model] if self.config.model else []

    def planned_requests(self, case: Case) -> list[Any]:
        """The one request ``agenerate`` sends for ``case``, not sent (``run --plan``)."""
        messages, params, _ = self._request(case)
        return [self.runtime.models.planned(self.config.model, messages, params=params, answer="generation")]

    async def agenerate(self, case: Case) -> Generation:
        messages, params, details = self._request(case)
        completion = await self.runtime.models.complete(self.config.model, messages, params=params,
                                                        template=self.config.prompt)
        # the model's own answer time: a cache hit keeps the latency of the call that filled it,
        # so the grid's median latency describes the system, not how warm the cache was
        details.update(cached=completion.cached, latency_ms=completion.latency_ms)
        return Generation(text=completion.text, details=details,
                          usage={**completion.usage.to_dict(), "cache_hits": int(completion.cached)})


def user_content(case: Case) -> Any:
    """What the model under test is asked: the case's input parts when its input holds media, else
    the last user message's parts when they do, else the input's text."""
    if case.input_parts is not None:
        return case.input_parts
    for message in reversed(case.messages or ()):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list) and any(isinstance(p, dict) and p.get("type") in MEDIA_KINDS
                                                 for p in content):
                return content
            break
    return case.input


@hookimpl
def register_generators(register):
    register(ModelGenerator)
