import click


@click.group("checklist")
def checklist_group():
    """Checklists: generate them for a suite, then score with them."""
