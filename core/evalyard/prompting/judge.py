"""The judge service: one model and one template, resolved and checked once, asked through ``ask``.

``runtime.judge(template, model=None)`` is how every model-graded scorer gets its judge (prompt
scorers, the judge plugin's families, checklist, Trust-Score, a plugin's own). The model is the
scorer's option, else the run's judge model, else the one a plugin offers by default; it is
checked by its provider before anything is stored. A scorer that keeps its judge as an attribute
gets the judge's fingerprint (model, template name, hash and origin) in its own without writing
a line (``Scorer.fingerprint_data``), so ``evalyard compare`` warns when either changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..errors import ConfigError
from ..scoring import Fingerprinted
from .ask import Judgement, ask, planned_asks
from .template import PromptTemplate, parse_template

if TYPE_CHECKING:
    from ..protocols import ScorerRuntime


def missing_model_message(scorer: str) -> str:
    return (f"scorer {scorer} needs a judge model: pass --judge-model MODEL, set EVALYARD_JUDGE_MODEL, "
            f"or give the scorer a `model` option in the suite")


class Judge(Fingerprinted):
    """A model and a template; ``ask`` options given here are the defaults of every ask. ``layer``
    gives the model layer when asking (a run's layer moves onto the run's database once it exists)."""

    def __init__(self, layer: Callable[[], Any], model: str, template: PromptTemplate, **options: Any) -> None:
        self.model, self.template, self.options = model, template, options
        self._layer_of, self._layer = layer, None
        #: what every judgement's details name: the template and its hash (the same for every case)
        self._named = {"template": template.name, "template_hash": template.hash}

    def layer(self) -> Any:
        """The model layer, asked for once: a run has one layer for its life (what changes when the
        run's database exists, its cache, changes inside it)."""
        if self._layer is None:
            self._layer = self._layer_of()
        return self._layer

    def fingerprint(self) -> dict[str, Any]:
        """What this judge adds to a scorer's fingerprint (the keys prompt scorers always stored)."""
        return {**self._named, "template_source": self.template.origin, "model": self.model}

    def with_template(self, template: PromptTemplate) -> "Judge":
        """The same model and options with another template (a step of a several-step judge)."""
        return Judge(self._layer_of, self.model, template, **self.options)

    async def ask(self, case: Any = None, **options: Any) -> Judgement:
        """``ask`` this judge about ``case``; the judgement's details name the template and its hash."""
        judgement = await ask(self.layer(), self.model, self.template, case, **{**self.options, **options})
        judgement.details = {**self._named, **judgement.details}
        return judgement

    def planned(self, case: Any = None, **options: Any) -> list[Any]:
        """The requests ``ask`` would send for ``case`` (``run --plan``), not sent."""
        return planned_asks(self.layer(), self.model, self.template, case, **{**self.options, **options})


def resolve_template(library: Any, template: str | Path | PromptTemplate,
                     default: Path | PromptTemplate | None = None) -> PromptTemplate:
    """A template by name from a library (the run's: user directories first), else ``default``: the
    template that ships with the scorer (a file next to it, or a parsed one), so a scorer works in
    a runtime whose plugins did not register their templates, and a user's file of the same name
    still overrides it."""
    if isinstance(template, PromptTemplate):
        return template
    if isinstance(template, Path):
        return parse_template(template.read_text(encoding="utf-8"), name=template.stem, path=str(template),
                              source="file")
    if default is not None and template not in library.names():
        if isinstance(default, PromptTemplate):
            return default
        return parse_template(default.read_text(encoding="utf-8"), name=template, path=str(default),
                              source="plugin")
    return library.get(template)


def make_judge(runtime: ScorerRuntime, template: str | Path | PromptTemplate, model: str | None = None, *,
               scorer: str = "judge", default: Path | PromptTemplate | None = None, **options: Any) -> Judge:
    """See ``Runtime.judge``."""
    chosen = model or runtime.judge_model
    if not chosen:
        raise ConfigError(missing_model_message(scorer))
    runtime.check_model(chosen)
    return Judge(lambda: runtime.models, chosen, resolve_template(runtime.prompts, template, default), **options)
