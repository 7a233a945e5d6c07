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
    register(TEMPLATES)


@hookimpl
def register_loaders(register):
    from .loader import load_json, load_jsonl

    # Same extensions as the core's loaders: trust-eval's shape is recognised, anything else
    # goes to the core's loader unchanged (see loader.py).
    register(".json", load_json)
    register(".jsonl", load_jsonl)
