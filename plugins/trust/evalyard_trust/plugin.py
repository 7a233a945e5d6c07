"""The evalyard plugin entry point (``[project.entry-points.evalyard] trust``)."""

from pathlib import Path

from evalyard import hookimpl

TEMPLATES = Path(__file__).parent / "prompts"


@hookimpl
def register_scorers(register):
    from .scorers import SCORERS

    for scorer in SCORERS:
        register(scorer)


@hookimpl
def register_prompt_templates(register):
    # Named trust/entailment by the registry (its 0.1 name, trust_entailment, is gone).
    register(TEMPLATES)


@hookimpl
def register_loaders(register):
    from .loader import FORMAT, EXTENSIONS, load_trust_eval

    # A format of its own, chosen by name (--format trust-eval, a suite's format:) or by its own
    # file endings: plain .json/.jsonl files stay the core's, whatever their content.
    register(FORMAT, load_trust_eval, extensions=EXTENSIONS)


@hookimpl
def register_hookspecs(register):
    from . import hookspecs

    register(hookspecs)


@hookimpl
def register_entailment_backends(register):
    from .backends import JudgeEntailment, LexicalEntailment

    register("lexical", lambda config, runtime: LexicalEntailment())
    register("judge", JudgeEntailment)


@hookimpl
def register_refusal_detectors(register):
    from .refusal import fuzzy_detector

    register("fuzzy", fuzzy_detector)
