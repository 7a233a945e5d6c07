"""Step 1 of the plugin tutorial (docs/tutorials/scorer-plugin.md): the smallest scorer plugin.

    EVALYARD_EXTRA_PLUGINS=examples/plugins/shouty_v1.py evalyard run examples/plugins/replies.jsonl -s shouty
"""

from evalyard import Score, Scorer, hookimpl


class Shouty(Scorer):
    name = "shouty"
    requires = ("candidate",)

    def score(self, case):
        return Score(value=1.0 if case.candidate.isupper() else 0.0)


@hookimpl
def register_scorers(register):
    register(Shouty)
