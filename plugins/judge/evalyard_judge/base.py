"""What every judge of this plugin shares: its templates found in the run's prompt library
(or in the plugin when the scorer is used outside a run), and JSON steps asked with the
core's ``ask`` exactly as the scorer's own judgement is."""

from __future__ import annotations

from typing import Any

from evalyard import PromptLibrary, PromptScorer, Usage

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


class JudgeScorer(PromptScorer):
    """A prompt scorer whose templates live in this plugin."""

    def prompt_template(self):
        if self.template is None:
            if self.prompts is None:
                self.prompts = PromptLibrary()  # outside a run: the built-ins and this plugin's
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

    async def step(self, stem: str, key: str, case: Any, sample: int = 0, usage: Usage | None = None) -> tuple[
            Any, Usage]:
        """One JSON step: the ``key`` field of the answer to template ``judge/<stem>``, and ``usage``
        plus this step's. A step without an answer raises JudgeError (the case's error, every
        call's usage kept)."""
        judgement = await self.judge(case, template=self.step_template(stem), answer=None, reasoning=False,
                                     structured=True, logprobs=False, samples=1, first_sample=sample)
        earlier = usage or Usage()
        judgement.require(key, earlier)
        return judgement.answer[key], earlier + judgement.usage

    def step_hashes(self, *stems: str) -> dict[str, str]:
        return {template_name(stem): self.step_template(stem).hash for stem in stems}
