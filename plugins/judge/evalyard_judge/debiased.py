"""Position-debiased pairwise verdicts, for a pairwise judge asked with ``logprobs=true``.

A small judge often names a position rather than a response ("second", whatever is second).
Judged in both orders, each order's answer-token probabilities give P(candidate better) in that
order (P(candidate's position) plus half P(tie)); their mean cancels a fixed pull towards one
position. The verdict is the side that mean favours by more than a margin, else a tie: a judge
whose preference is all position ends up at 0.5 and says so, instead of picking a side.
Zheng et al. 2023, "Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena" (section 3.3, swapping
positions), is the source of judging both orders; reading the orders' probabilities is ours.
"""

from __future__ import annotations

#: How far from 0.5 the mean P(candidate better) must be for a side to win (an option, ``tie_margin``).
DEFAULT_TIE_MARGIN = 0.1


def debiased_label(value: float, margin: float) -> str:
    """``candidate``, ``reference`` or ``equal`` from the mean P(candidate better) of both orders."""
    if value > 0.5 + margin:
        return "candidate"
    if value < 0.5 - margin:
        return "reference"
    return "equal"
