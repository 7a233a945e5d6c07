"""What a run lends its scorers and generators: the judge model, the prompt library and the
model layer.

The application makes one ``Runtime`` per run and hands it to every scorer and generator
through ``setup(runtime)`` before anything is stored, so configuration mistakes (no judge
model, a broken template) stop the run at once. The model layer is made when a run first
needs it, on the run's own database (its ``model_calls`` table is the response cache), so
importing the core or planning a run never imports litellm or opens a connection.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from .errors import InputError, StopRun  # noqa: F401  (StopRun re-exported: scorers raise it)

if TYPE_CHECKING:
    from .protocols import HookApplication


class Runtime:
    def __init__(self, *, judge_model: str | None = None, default_judge: Any = None, prompt_dirs: Iterable[str | Path] = (),
                 plugin_templates: Iterable[tuple] = (), model_settings: dict[str, Any] | None = None,
                 use_cache: bool = True, max_cost: float | None = None, concurrency: int = 4,
                 batch: bool = False, app: HookApplication | None = None, judge_offered: bool = False) -> None:
        self._judge_model = judge_model
        self._default_judge = default_judge
        self._judge_resolved = judge_model is not None
        # ``judge_offered``: ``judge_model`` is the plugin's default an earlier runtime of this run
        # settled on (a resumed run, a worker), not a model the user chose
        self._user_judge_model = None if judge_offered else judge_model
        self.prompt_dirs = [Path(d) for d in prompt_dirs]
        self.plugin_templates = list(plugin_templates)
        self.model_settings = dict(model_settings or {})
        self.use_cache = use_cache
        self.max_cost = max_cost
        self.concurrency = concurrency
        self.batch = batch
        #: the application this run belongs to (its registry: providers, settings, hook tables)
        self.app = app
        self._store = None
        self._run_id: str | None = None
        self._prompts = None
        self._models = None
        self._checked_models: set[str] = set()
        #: whether a scorer or generator asked for the run's judge model (so it is checked)
        self.judge_asked = False
        #: what a worker rebuilds this runtime from (``evalyard.scorer_ref.RuntimeRecipe``); set by the application
        self.recipe = None

    # The run's database and id are known only once the run is created, after scorers were set
    # up; a layer already made (a scorer asked the provider's capabilities in setup) moves onto them.
    @property
    def store(self):
        return self._store

    @store.setter
    def store(self, store) -> None:
        self._store = store
        if self._models is not None and store is not None:
            from .models import SQLCache

            self._models.cache = SQLCache(store.engine)
            self._models.media_reader = store.media
            if self._models.batch is not None:
                self._models.batch.engine = store.engine

    @property
    def run_id(self) -> str | None:
        return self._run_id

    @run_id.setter
    def run_id(self, run_id: str | None) -> None:
        self._run_id = run_id
        if self._models is not None and self._models.batch is not None:
            self._models.batch.run_id = run_id

    @property
    def judge_model(self) -> str | None:
        """The configured judge model; else the one a plugin offers (``default_judge_model`` hook),
        said once on stderr so nobody is judged by a model they did not choose without knowing."""
        self.judge_asked = True
        if not self._judge_resolved:
            self._judge_resolved = True
            offered = self._default_judge() if self._default_judge is not None else None
            if offered:
                import logging

                model, note = offered if isinstance(offered, tuple) else (offered, None)
                logging.getLogger("evalyard").warning(
                    "evalyard: %s", note or f"no judge model configured; judges use {model}. Choose one with "
                    "--judge-model MODEL or EVALYARD_JUDGE_MODEL.")
                self._judge_model = model
        return self._judge_model

    @property
    def chosen_judge_model(self) -> str | None:
        """The judge model this run uses so far, without asking plugins for a default."""
        return self._judge_model

    @property
    def judge_offered(self) -> bool:
        """Whether the run's judge model is a plugin's default rather than the user's choice."""
        return self._judge_model is not None and self._user_judge_model is None

    def user_judge_model(self) -> str | None:
        """The judge model the user chose for this run (``--judge-model``, ``EVALYARD_JUDGE_MODEL``),
        else None: a model a plugin offers by default never counts, whether or not a judge has
        settled on it already. For a scorer whose fallback without a judge is no model at all
        (Trust-Score's ``entailment=auto`` falls back on its lexical stub)."""
        return self._user_judge_model

    def registered(self, hook_name: str, what: str = "entry") -> dict[str, Any]:
        """What the application's plugins register through a hook of the ``register(name, obj)``
        shape, by name: how a plugin reads the hooks it declared (``register_hookspecs``)."""
        return self._application().registry.registered(hook_name, what)

    def setting(self, key: str) -> Any:
        """A plugin's typed setting (``register_settings``) as the application read it:
        ``runtime.setting("embedding.cache_mb")``."""
        return self._application().setting(key)

    def model_providers(self) -> dict[str, Any]:
        """Model providers by model-string prefix: the application's (none without one)."""
        return dict(self.app.model_providers) if self.app is not None else {}

    def _application(self):
        if self.app is None:
            raise RuntimeError("this runtime belongs to no application: make it with Application.runtime()")
        return self.app

    def check_model(self, model: str) -> None:
        """Refuse, before the run is stored, a model that its provider says it cannot serve: a
        provider of ours may have ``check(model)``, which raises when, say, the model's file is not
        installed. Providers without it (litellm's) are asked nothing: their errors come per call."""
        if model in self._checked_models:
            return
        prefix, slash, _ = model.partition("/")
        handler = self.model_providers().get(prefix) if slash else None
        check = getattr(handler, "check", None)
        if check is not None:
            try:
                check(model)
            except InputError:
                raise
            except Exception as exc:
                raise InputError(str(exc) or f"model {model}: {type(exc).__name__}") from None
        self._checked_models.add(model)

    def judge(self, template: Any, model: str | None = None, *, scorer: str = "judge", default: Any = None,
              **options: Any):
        """The judge service: ``template`` (a library name, a path or a parsed template; for a name
        the library lacks, ``default``: the template shipped with the scorer, a path or a parsed
        one) asked of ``model``, else of the run's judge model, else of a plugin's default; the
        model is checked by its provider now, before the run is stored. ``options`` are the defaults of every ``ask``.
        A scorer that keeps the returned judge as an attribute has its fingerprint in its own."""
        from .prompting.judge import make_judge

        return make_judge(self, template, model, scorer=scorer, default=default, **options)

    @property
    def prompts(self):
        """The prompt library: user directories, then plugins' templates, then the built-ins."""
        if self._prompts is None:
            from .prompting.library import PromptLibrary

            library = PromptLibrary(self.prompt_dirs)
            for name, source, plugin in self.plugin_templates:
                if isinstance(source, (str, bytes)) and not isinstance(source, Path):
                    library.add_plugin_template(name, source, plugin=plugin)
                else:
                    library.add_plugin_template(name, path=source, plugin=plugin)
            self._prompts = library
        return self._prompts

    @property
    def models(self):
        """The model layer every model call of this run goes through (cache, retries, limits, usage)."""
        if self._models is None:
            from .models import MemoryCache, ModelLayer, ModelSettings, SQLCache, UsageMeter

            cache = SQLCache(self.store.engine) if self.store is not None else MemoryCache()
            settings = {model: value if isinstance(value, ModelSettings) else ModelSettings.from_dict(value)
                        for model, value in self.model_settings.items()}
            self._models = ModelLayer(cache=cache, use_cache=self.use_cache, concurrency=self.concurrency,
                                      settings=settings, usage=UsageMeter(max_cost=self.max_cost),
                                      judge_model=self._judge_model, providers=self.model_providers(),
                                      env=self.app.settings.env if self.app is not None else {})
            if self.store is not None:
                self._models.media_reader = self.store.media
            if self.batch or any(s.batch for s in settings.values()):
                from .models.batch import BatchQueue

                self._models.batch = BatchQueue(self._models, self.store.engine if self.store is not None else None,
                                                self.run_id)
                self._models.batch_all = self.batch
        return self._models

    def usage(self) -> dict[str, Any] | None:
        """This run's model usage (calls, cache hits, tokens, cost), or None when no model was called."""
        if self._models is None:
            return None
        return self._models.usage.to_dict()

    def close(self) -> None:
        if self._models is not None:
            self._models.close()
