"""What every judge of this plugin shares: its templates found in the run's prompt library
(or in the plugin when the scorer is used outside a run), the request parameters a
prompt scorer would send, and adding up the usage of several judgements."""

from __future__ import annotations

from typing import Any

from evalyard.prompting import PromptLibrary, PromptScorer, env_dirs

from .templates import TEMPLATE_DIR, template_name


def ensure_templates(library: PromptLibrary) -> PromptLibrary:
    """Add the plugin's templates a library lacks (an application that did not load the plugin
    through its entry point still has user directories and built-ins, so overrides keep working)."""
    known = set(library.names())
    for path in sorted(TEMPLATE_DIR.glob("*.jinja")):
        name = template_name(path.stem)
        if name not in known:
            library.add_plugin_template(name, path.read_text(encoding="utf-8"), plugin="judge")
    return library


RAW_LIMIT = 4000


class StepFailed(Exception):
    """A step's call or JSON answer failed; ``details`` name the step and hold the raw reply."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details = details


class JudgeScorer(PromptScorer):
    """A prompt scorer whose templates live in this plugin."""

    def prompt_template(self):
        if self.template is None:
            if self.prompts is None:
                self.prompts = PromptLibrary(env_dirs())
            ensure_templates(self.prompts)
        return super().prompt_template()

    def setup(self, runtime: Any) -> None:
        ensure_templates(runtime.prompts)
        super().setup(runtime)

    def library(self) -> PromptLibrary:
        self.prompt_template()
        return self.prompts

    def step_template(self, stem: str):
        """Another template of this plugin that the scorer uses for a step of its own."""
        return self.library().get(template_name(stem))

    def call_params(self, template: Any) -> dict[str, Any]:
        """The request parameters, chosen exactly as a prompt scorer chooses them."""
        params = dict(template.parameters)
        temperature = self.config.temperature
        params["temperature"] = temperature if temperature is not None else params.get("temperature", 0.0)
        if self.config.max_tokens is not None:
            params["max_tokens"] = self.config.max_tokens
        return params

    async def ask_json(self, stem: str, key: str, case: Any, sample: int = 0) -> tuple[Any, dict[str, Any]]:
        """One JSON step: the ``key`` field of the answer to template ``judge/<stem>`` and the
        call's usage. A failed call or an answer unreadable after the repair call raises StepFailed."""
        from evalyard.models import CostLimitReached, ModelCallError, StructuredOutputError
        from evalyard.models.usage import summarise_calls

        template = self.step_template(stem)
        rendered = template.render(case, structured=True, reasoning=False)
        try:
            answer = await self.layer().complete_json(self.judge_model(), rendered.messages, template.answer.schema,
                                                      params=self.call_params(template), sample=sample,
                                                      template=template.name)
        except CostLimitReached:
            raise
        except StructuredOutputError as exc:
            raise StepFailed(f"{key}: {exc}", step=key, raw=exc.raw[:RAW_LIMIT]) from None
        except ModelCallError as exc:
            raise StepFailed(f"{key}: {exc}", step=key) from None
        return answer.value[key], summarise_calls(answer.completions)

    def step_hashes(self, *stems: str) -> dict[str, str]:
        return {template_name(stem): self.step_template(stem).hash for stem in stems}


def merge_usage(*usages: dict[str, Any] | None) -> dict[str, Any] | None:
    """One case's usage from the usage of several judgements (as ``summarise_calls`` counts it)."""
    present = [u for u in usages if u]
    if not present:
        return None
    out: dict[str, Any] = {}
    for key in ("calls", "cache_hits", "retries", "prompt_tokens", "completion_tokens"):
        out[key] = sum(u.get(key) or 0 for u in present)
    costs = [u.get("cost") for u in present if u.get("cost") is not None]
    out["cost"] = sum(costs) if costs else None
    out["cost_complete"] = all(u.get("cost_complete", True) for u in present)
    out["models"] = sorted({m for u in present for m in u.get("models") or []})
    return out
