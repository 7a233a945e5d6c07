"""Token log-probabilities: reading them from a litellm response, P(yes), and a choice's
label probabilities.

``p_yes`` folds the variants a tokenizer produces for one word ("yes", "Yes", " YES",
"yes." ...) and normalises over yes and no only: p(yes) / (p(yes) + p(no)).
``label_probabilities`` does the same for the labels of a choice (``first``, ``second``,
``tie`` ...): each label's share of the first answer token's mass that goes to some label.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

YES_WORDS = frozenset({"yes", "y", "true"})
NO_WORDS = frozenset({"no", "n", "false"})


def _fold(token: str) -> str:
    return token.strip().strip(".,:;!\"'`*").lower()


def _position_masses(top: Mapping[str, float]) -> tuple[float, float]:
    yes = no = 0.0
    for token, logprob in top.items():
        word = _fold(token)
        if word in YES_WORDS:
            yes += math.exp(logprob)
        elif word in NO_WORDS:
            no += math.exp(logprob)
    return yes, no


def p_yes(top_logprobs: Mapping[str, float] | Iterable[Mapping[str, float]] | None) -> float | None:
    """P(yes) over the first answer token, or None when neither yes nor no is among the tokens.

    Takes one position's ``{token: logprob}`` map, or a sequence of them (one per answer
    token); with a sequence, the first position where yes or no appears is used, so
    leading whitespace or punctuation tokens are skipped.
    """
    if top_logprobs is None:
        return None
    positions = [top_logprobs] if isinstance(top_logprobs, Mapping) else list(top_logprobs)
    for top in positions:
        yes, no = _position_masses(top)
        if yes + no > 0:
            return yes / (yes + no)
    return None


def label_probabilities(top_logprobs: Mapping[str, float] | Iterable[Mapping[str, float]] | None,
                        labels: Iterable[str]) -> dict[str, float] | None:
    """Each label's probability, normalised over the labels, from the first answer position where
    any label's token appears; None when none does. A token counts for a label when, folded, it
    is that label, or the start of that label and of no other (a tokenizer may split a long
    label: "cannot" + "_tell"); a token that starts two labels says nothing about which one."""
    if top_logprobs is None:
        return None
    names = list(labels)
    folded = {name: _fold(name) for name in names}
    positions = [top_logprobs] if isinstance(top_logprobs, Mapping) else list(top_logprobs)
    for top in positions:
        mass = dict.fromkeys(names, 0.0)
        for token, logprob in top.items():
            word = _fold(token)
            if not word:
                continue
            matches = [name for name in names if folded[name] == word] or \
                [name for name in names if folded[name].startswith(word)]
            if len(matches) == 1:
                mass[matches[0]] += math.exp(logprob)
        total = sum(mass.values())
        if total > 0:
            return {name: m / total for name, m in mass.items()}
    return None


def from_response(choice: Any) -> list[dict[str, Any]] | None:
    """Per-token ``{"token", "logprob", "top"}`` entries from a litellm choice, or None."""
    logprobs = getattr(choice, "logprobs", None)
    if logprobs is None and isinstance(choice, Mapping):
        logprobs = choice.get("logprobs")
    if logprobs is None:
        return None
    content = getattr(logprobs, "content", None)
    if content is None and isinstance(logprobs, Mapping):
        content = logprobs.get("content")
    if not content:
        return None
    out = []
    for entry in content:
        token = _get(entry, "token")
        logprob = _get(entry, "logprob")
        top = {_get(t, "token"): _get(t, "logprob") for t in (_get(entry, "top_logprobs") or [])}
        out.append({"token": token, "logprob": logprob, "top": top})
    return out


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)
