"""A judge-style plugin written against the public API only (``from evalyard import ...``): the
judge service resolves and checks its model, asks through the model layer (caching, retries,
usage, structured output, P(yes)) and puts model and template hash in the scorer's fingerprint."""

from __future__ import annotations

from dataclasses import dataclass

from evalyard import Scorer, hookimpl, parse_template

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
        # A user's tiny/polite.jinja overrides the template; without one, POLITE is used.
        self.judge = runtime.judge("tiny/polite", default=POLITE, scorer=self.name)

    async def ascore(self, case):
        judgement = await self.judge.ask(case, logprobs=self.config.logprobs, structured=self.config.structured)
        return judgement.score()


@hookimpl
def register_scorers(register):
    register(Polite)
