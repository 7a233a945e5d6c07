"""The plugin tutorial's scorer, grown (docs/tutorials/scorer-plugin.md): the share of a reply's
letters that are capitals, with a threshold, a typed option and details that say why.

    EVALYARD_EXTRA_PLUGINS=examples/plugins/shouty.py evalyard run examples/plugins/replies.jsonl -s shouty
"""

from dataclasses import dataclass, field

from evalyard import Score, Scorer, hookimpl


class Shouty(Scorer):
    name = "shouty"
    description = "Share of the candidate's letters that are capitals (1.0: all shouted)."
    requires = ("candidate",)
    version = "2"
    higher_is_better = False
    threshold = 0.5  # a case passes when at most half its letters are capitals

    @dataclass
    class Config:
        min_letters: int = field(default=3, metadata={"help": "replies with fewer letters are not scored"})

    def score(self, case):
        letters = [c for c in case.candidate if c.isalpha()]
        if len(letters) < self.config.min_letters:
            return Score(value=None, error=f"only {len(letters)} letters (min_letters={self.config.min_letters})")
        capitals = sum(c.isupper() for c in letters)
        return Score(value=capitals / len(letters), details={"letters": len(letters), "capitals": capitals})


@hookimpl
def register_scorers(register):
    register(Shouty)
