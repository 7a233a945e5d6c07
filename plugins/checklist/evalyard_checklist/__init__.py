"""evalyard-checklist: checklist generators and the checklist scorer (AutoChecklist's pipelines).

From Python::

    from evalyard_checklist import register_checklist_scorer
    register_checklist_scorer("house_rules", template="my_checklist_prompt", mode="item",
                              primary_metric="weighted", app=app)
"""

from .data import Checklist, ChecklistItem, checklist_from, load_checklists_file
from .registration import register_checklist_scorer

__all__ = ["Checklist", "ChecklistItem", "checklist_from", "load_checklists_file", "register_checklist_scorer"]
