"""Custom checklist scorers: a checklist scoring prompt plus the scorer's defaults, under a new name."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalyard import ConfigError

from .scorer import ChecklistScorer, make_scorer_class

if TYPE_CHECKING:
    from evalyard import Application


def register_checklist_scorer(name: str, *, template: str | Path, mode: str = "batch", primary_metric: str = "pass",
                              capture_reasoning: bool = False, app: Application | None = None, register: Any = None,
                              **options: Any) -> type[ChecklistScorer]:
    """Make a checklist scorer ``name`` that scores with ``template``.

    ``template`` is a template name from the prompt library, a path to a ``.jinja`` file, or the
    template's text (front matter and body). A batch-mode template declares
    ``variables: {checklist: ""}`` (the questions, rendered ``Q1: ...``); an item-mode one
    ``variables: {question: ""}``. ``primary_metric="normalized"`` turns logprobs on (item mode).
    The scorer joins ``app`` (an ``evalyard.Application``) or is handed to ``register`` (inside a
    plugin's ``register_scorers``); either way the class is returned.
    """
    from evalyard import parse_template

    defaults: dict[str, Any] = {"mode": mode, "primary_metric": primary_metric,
                                "capture_reasoning": capture_reasoning, **options}
    text: str | None = None
    path = Path(template) if not isinstance(template, Path) and "\n" not in str(template) else template
    if isinstance(path, Path) and path.suffix in (".jinja", ".j2") and path.is_file():
        text = path.read_text(encoding="utf-8")
    elif isinstance(template, str) and template.lstrip().startswith("---"):
        text = template
    template_name = f"checklist_custom/{name}" if text is not None else str(template)
    if text is not None:
        parsed = parse_template(text, name=template_name, path=str(path) if isinstance(path, Path) else None)
        wanted = "checklist" if mode == "batch" else "question"
        if wanted not in parsed.variables:
            raise ConfigError(f"register_checklist_scorer({name!r}): a {mode}-mode checklist template declares "
                              f"`variables: {{{wanted}: ''}}` in its header")
    cls = make_scorer_class(name, template=template_name, **defaults)
    cls.template_text = text
    if app is not None:
        app.register_scorer(cls)
    if register is not None:
        register(cls)
    return cls
