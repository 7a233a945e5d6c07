"""A judge-style plugin written against the public API only (``from evalyard import ...``): the
model layer gives it caching, retries and usage; ``ask`` structured output and P(yes)."""

from __future__ import annotations

from dataclasses import dataclass

from evalyard import ConfigError, Scorer, hookimpl, ask, parse_template

POLITE = parse_template("""---
fields: [input, candidate]
answer: binary
---
A customer asked:
{{ input }}

The support agent replied:
{{ candidate }}

Is the reply polite?
""", name="tiny/polite")


class Polite(Scorer):
    name = "polite"
    description = "Is the reply polite? (a judge: 1 = yes)"
    requires = ("input", "candidate")
    executor = "async"
    threshold = 0.5

    @dataclass
    class Config:
        logprobs: bool = False
        structured: bool = False

    def setup(self, runtime):
        if not runtime.judge_model:
            raise ConfigError("polite needs a judge model (--judge-model MODEL)")
        self.runtime = runtime

    async def ascore(self, case):
        judgement = await ask(self.runtime.models, self.runtime.judge_model, POLITE, case,
                              logprobs=self.config.logprobs, structured=self.config.structured)
        return judgement.score()


@hookimpl
def register_scorers(register):
    register(Polite)
