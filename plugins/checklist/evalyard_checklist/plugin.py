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
def register_scorer_kinds(register):
    """A template whose header says ``scorer: {kind: checklist, name: ..., options: {...}}`` is a
    checklist scorer of its own, no Python needed."""
    register("checklist", checklist_scorer_from_template)


def checklist_scorer_from_template(template):
    from .scorer import make_scorer_class

    spec = template.scorer or {}
    name = spec.get("name") or template.name.rsplit("/", 1)[-1]
    return make_scorer_class(name, template=template.name, description=spec.get("description") or template.description,
                             **(spec.get("options") or {}))


@hookimpl
def register_prompt_templates(register):
    # The registry names them checklist/<file stem>; the former names (checklist_<stem>) keep working.
    register(TEMPLATE_DIR)


@hookimpl
def register_commands(cli):
    from .cli import checklist_group

    cli.add_command(checklist_group)
