"""The evalyard plugin entry point (``[project.entry-points.evalyard] checklist``)."""

from pathlib import Path

from evalyard import hookimpl

TEMPLATE_DIR = Path(__file__).parent / "templates"


@hookimpl
def register_scorers(register):
    from .scorer import ChecklistScorer

    register(ChecklistScorer)


@hookimpl
def register_generators(register):
    from .generators import GENERATOR_CLASSES

    for cls in GENERATOR_CLASSES:
        register(cls)


@hookimpl
def register_prompt_templates(register):
    register(TEMPLATE_DIR)


@hookimpl
def register_commands(cli):
    from .cli import checklist_group

    cli.add_command(checklist_group)
