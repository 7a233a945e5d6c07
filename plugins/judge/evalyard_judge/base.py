"""What every judge of this plugin shares: its templates ship next to it (``templates/``) and are
found in the run's prompt library first (a user's ``judge/<stem>.jinja`` overrides one), and
JSON steps asked through the judge service exactly as the scorer's own judgement is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalyard import PromptLibrary, PromptScorer, Usage, resolve_template

from .templates import TEMPLATE_DIR, template_name


def template_file(stem: str) -> Path:
    """The file of the plugin's template ``judge/<stem>``."""
    return TEMPLATE_DIR / f"{stem}.jinja"


class JudgeScorer(PromptScorer):
    """A prompt scorer whose templates live in this plugin."""

    @property
    def template_file(self) -> Path:  # type: ignore[override]
        return template_file(self.template_name.rpartition("/")[2])

    def library(self) -> PromptLibrary:
        """The run's prompt library; outside a run, the built-ins (the plugin's files fill in)."""
        if self.prompts is None:
            self.prompts = PromptLibrary()
        return self.prompts

    def step_template(self, stem: str):
        """Another template of this plugin that the scorer uses for a step of its own."""
        return resolve_template(self.library(), template_name(stem), template_file(stem))

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
