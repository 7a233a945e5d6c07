"""The application object: one per CLI invocation, per test, or per Python session.

It owns the settings, the plugin host (pluggy manager), the registry built from it and
the store factory; the CLI and the public Python API (``evalyard.evaluate``, ``resume``,
``compare``) are thin clients over it. Nothing in the core is global, so two
applications with different plugins can live in one process.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from .errors import InputError
from .plugins import PluginHost
from .registry import Registry, build
from .run_contract import RunPlan, RunResult, close_prepared
from .scoring import Case
from .settings import Settings
from .suite import ScorerSpec, Suite

if TYPE_CHECKING:
    from .analysis.reducers import ReducerNames
    from .experiments import ExperimentOutcome, ExperimentRequest
    from .run_service import RunOutcome, RunRequest


def plugin_templates(registry: Registry) -> list[tuple[str, Any, str]]:
    """(qualified name, text or path, plugin namespace) of every template plugins registered: a
    plugin's templates are ``<namespace>/<bare name>`` in the prompt library."""
    return [(e.qualified, e.obj, e.namespace) for e in registry.prompt_templates]


def with_prompt_scorers(registry: Registry, library) -> Registry:
    """A copy of ``registry`` with a scorer for each template that declares one (``scorer:`` in
    its header): namespaced ``evalyard/`` (built-in), the plugin's, or ``prompts/`` (the user's)."""
    import copy

    from .prompting.scorer import scorer_from_template
    from .registry import Table

    extended = copy.copy(registry)
    extended.scorers = Table("scorer", dict(registry.scorers.entries))
    for template in library.scorer_templates():
        kind = (template.scorer or {}).get("kind") or "prompt"
        if kind == "prompt":
            cls = scorer_from_template(template)
        else:
            if kind not in registry.scorer_kinds:
                raise InputError(f"template {template.name} declares a scorer of kind {kind!r}, which no installed "
                                 f"plugin provides (kinds: prompt, {', '.join(e.name for e in registry.scorer_kinds)})",
                                 path=template.path or template.origin)
            cls = registry.scorer_kinds.get(kind)(template)
        if template.source == "built-in":
            namespace, plugin = "evalyard", "evalyard.prompts"
        elif template.source.startswith("plugin "):
            namespace = plugin = template.source[len("plugin "):]
        else:
            namespace, plugin = "prompts", f"prompts:{template.path}"
        qualified = f"{namespace}/{cls.name}"
        if qualified in extended.scorers.entries:
            extended.scorers.entries.pop(qualified)  # a newer template of the same name replaces it
        extended.scorers.add(cls.name, cls, plugin, namespace)
    return extended


#: Calls a batched run keeps in flight: a batch job should hold a whole round of the run's
#: calls, not the handful an online run sends at once.
BATCH_CONCURRENCY = 10_000


def batch_concurrency(run_settings: dict[str, Any], concurrency: int) -> int:
    models = run_settings.get("models") or {}
    batched = run_settings.get("batch") or any((s or {}).get("batch") for s in models.values())
    return max(concurrency, BATCH_CONCURRENCY) if batched else concurrency


def set_up(runtime, prepared: list, generator) -> None:
    """Hand every scorer and the generator the run's runtime; a configuration that cannot
    work is bad input, reported before anything is stored."""
    from .errors import ConfigError

    try:
        for p in prepared:
            try:
                p.scorer.setup(runtime)
            except ConfigError as exc:
                raise InputError(f"{p.spec.origin or 'scorer'}: {exc}") from None
        if generator is not None:
            try:
                generator.generator.setup(runtime)
            except ConfigError as exc:
                raise InputError(f"--generator: {exc}") from None
    except BaseException:
        close_prepared(prepared, generator)
        raise


def _jsonable_settings(settings: dict[str, Any]) -> dict[str, Any]:
    import json

    return json.loads(json.dumps(settings, default=str))


def scorer_specs(scorers: Iterable[Any], origin: str = "scorers") -> list[ScorerSpec]:
    """Scorer choices given in Python: ``"name"``, ``"name:key=value,..."``, a dict with
    ``name``/``config``/``threshold``, or a ``ScorerSpec``."""
    from .suite_files import parse_scorer_option

    specs = []
    for item in scorers:
        if isinstance(item, ScorerSpec):
            specs.append(item)
        elif isinstance(item, str):
            spec = parse_scorer_option(item)
            spec.origin = origin
            specs.append(spec)
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            specs.append(ScorerSpec(item["name"], dict(item.get("config") or {}), item.get("threshold"), origin))
        else:
            raise InputError(f"{origin}: expected a scorer name, 'name:key=value', a dict or a ScorerSpec, got {item!r}")
    return specs


def merge_scorer_choice(suite_specs: list[ScorerSpec], chosen: list[ScorerSpec]) -> list[ScorerSpec]:
    """Scorers chosen for a run replace the suite's list; the suite's config and threshold for a
    scorer still apply when the choice names it (the choice's own values win)."""
    by_name = {s.name: s for s in suite_specs}
    out = []
    for spec in chosen:
        base = by_name.get(spec.name)
        if base is not None:
            spec = ScorerSpec(spec.name, {**base.config, **spec.config},
                              spec.threshold if spec.threshold is not None else base.threshold, spec.origin,
                              reducer=spec.reducer or base.reducer, batch_size=spec.batch_size or base.batch_size,
                              extract=spec.extract or base.extract)
        out.append(spec)
    return out


def with_reducers(specs: list[ScorerSpec], reducers: Sequence[tuple[str | None, str]], epochs: int,
                  known: ReducerNames) -> list[ScorerSpec]:
    """The specs with ``--reducer [SCORER=]SPEC`` applied (a named scorer's own over one for
    all), each reducer found in ``known`` (the registered reducers) and checked against the
    epochs: ``pass_at_k:k=5`` needs 5 of them."""
    import dataclasses

    from .analysis.reducers import parse_reducer

    names = {s.name for s in specs}
    for scorer, spec in reducers:  # each as given, an empty one too (never a silent mean)
        parse_reducer(spec, f"--reducer {scorer}=" if scorer is not None else "--reducer", known)
    every = [spec for scorer, spec in reducers if scorer is None]
    named = {}
    for scorer, spec in reducers:
        if scorer is not None:
            if scorer not in names:
                raise InputError(f"--reducer {scorer}={spec}: scorer {scorer!r} is not part of this run")
            named[scorer] = spec
    out = []
    for spec in specs:
        chosen = named.get(spec.name) or (every[-1] if every else None)
        where = "--reducer" if chosen else (spec.origin or "scorer")
        reducer = parse_reducer(chosen or spec.reducer or "mean", where, known)
        reducer.check_epochs(epochs, where)
        out.append(dataclasses.replace(spec, reducer=reducer.spec if (chosen or spec.reducer) else None))
    return out


def with_extractions(specs: list[ScorerSpec], extracts: Sequence[tuple[str | None, str]],
                     suite_default: tuple[str, ...] | None = None) -> list[ScorerSpec]:
    """The specs with their extraction steps: ``--extract [SCORER=]STEP`` (repeatable, steps in
    order; a named scorer's own over the steps for all), else the scorer entry's ``extract:``,
    else the suite's ``extract:``. Every step is checked here, before anything runs."""
    import dataclasses

    from .extraction import parse_extraction

    names = {s.name for s in specs}
    every = tuple(step for scorer, step in extracts if scorer is None)
    named: dict[str, tuple[str, ...]] = {}
    for scorer, step in extracts:
        if scorer is not None:
            if scorer not in names:
                raise InputError(f"--extract {scorer}={step}: scorer {scorer!r} is not part of this run")
            named[scorer] = (*named.get(scorer, ()), step)
    out = []
    for spec in specs:
        steps = named.get(spec.name) or every or spec.extract or suite_default
        if steps:
            steps = parse_extraction(steps, "--extract" if (named.get(spec.name) or every) else
                                     (spec.origin or "extract")).steps
        out.append(dataclasses.replace(spec, extract=steps or None))
    return out


@dataclass(frozen=True)
class RuntimeRecipe:
    """What a worker's runtime is rebuilt from: the application's settings and the run's settings
    (judge model, prompt directories, model settings, cost limit). The rebuilt runtime has no
    database: the run's process is its only writer, so a worker's model calls are cached in memory."""

    settings: Any  # evalyard.Settings
    run_settings: dict[str, Any]
    concurrency: int = 4
    spent: float = 0.0

    def build(self):
        """The runtime, made once per worker process for each run's recipe."""
        import pickle

        key = pickle.dumps(self)
        runtime = _runtimes.get(key)
        if runtime is None:
            runtime = _runtimes[key] = Application(self.settings).runtime(self.run_settings, self.concurrency,
                                                                          self.spent)
        return runtime


_runtimes: dict[bytes, Any] = {}


class Application:
    """One application: settings, plugins and the registry built from them, once.

    Everything a plugin reaches goes through it (hooks receive it as ``app``): its settings,
    plugins' typed settings (``setting``), its model providers. ``settings`` default to the
    process environment read once (``Settings.from_env()``)."""

    def __init__(self, settings: Settings | None = None, *, plugins: Sequence[tuple[str, object]] = ()) -> None:
        self.settings = settings if settings is not None else Settings.from_env()
        self._initial_plugins = list(plugins)
        self._host: PluginHost | None = None
        self._registry: Registry | None = None
        self._plugin_settings = None
        self._added_providers: dict[str, Any] = {}
        self._commands = None
        self._python_scorers: list[type] | None = None
        self._stores: dict[str, Any] = {}
        self._stores_lock = threading.Lock()

    # -- plugins -----------------------------------------------------------
    @property
    def host(self) -> PluginHost:
        if self._host is None:
            self._host = PluginHost(self.settings, self._initial_plugins, app=self)
        return self._host

    @property
    def registry(self) -> Registry:
        """Everything plugins registered, plus the scorers that prompt templates declare
        (built-in, plugins' and the user's own prompt directories)."""
        if self._registry is None:
            base = build(self.host, self.plugin_settings, self._added_providers)
            base._commands = self._commands  # collected already for the CLI: not twice
            self._registry = with_prompt_scorers(base, self.prompt_library(base))
        return self._registry

    def _changed(self) -> None:
        """Plugins or prompt directories changed: the registry is built again when next used."""
        self._registry = None
        self._plugin_settings = None

    @property
    def plugin_settings(self):
        """Plugins' typed settings (``register_settings``), read once from ``settings``."""
        if self._plugin_settings is None:
            from .registry import read_settings

            self._plugin_settings = read_settings(self.host)
        return self._plugin_settings

    def setting(self, key: str) -> Any:
        """One plugin setting by ``namespace.name``: ``app.setting("embedding.cache_mb")``."""
        return self.plugin_settings.get(key)

    @property
    def model_providers(self) -> dict[str, Any]:
        """Model providers by model-string prefix (``scripted``, ``local``...): the plugins'
        (``register_model_providers``, ``wrap_model_provider``) and ``add_model_provider``'s.
        This application's model layers route to these only."""
        return self.registry.providers

    def model_layer(self, **options: Any):
        """A model layer of this application (its providers, its environment for ``api_key_env``)
        outside a run: scripts, notebooks, tests. ``options`` go to ``ModelLayer``."""
        from .models import ModelLayer

        return ModelLayer(providers=self.model_providers, env=self.settings.env, **options)

    def add_model_provider(self, name: str, handler: Any) -> None:
        """Send ``name/...`` model strings of this application to ``handler`` (a litellm custom
        handler); it wins over a plugin's provider of the same name. A plugin registers its
        providers with the ``register_model_providers`` hook instead."""
        from .models.providers import check_provider

        check_provider(name, handler, "add_model_provider")
        self._added_providers[name] = handler
        self._changed()

    def prompt_library(self, registry: Registry | None = None, first_dirs: Iterable[str] = ()):
        """The user's prompt directories (``first_dirs``, then the settings'), plugins' templates, the built-ins."""
        from .runtime import Runtime

        return Runtime(prompt_dirs=[*first_dirs, *self.settings.prompt_dirs],
                       plugin_templates=plugin_templates(registry or self.registry)).prompts

    def use_prompt_dirs(self, dirs: Iterable[str]) -> None:
        """Put these prompt directories before the settings' (``--prompts-dir``); their
        templates override and their scorers join the registry."""
        import dataclasses

        dirs = tuple(str(d) for d in dirs)
        if dirs:
            self.settings = dataclasses.replace(self.settings, prompt_dirs=dirs + self.settings.prompt_dirs)
            self._changed()

    def register_plugin(self, plugin: object, name: str, namespace: str | None = None) -> None:
        """Add an in-process plugin (tests, notebooks); undo with ``unregister_plugin``."""
        self.host.register(plugin, name, namespace)
        self._changed()

    def register_scorer(self, cls: type) -> str:
        """Make a scorer class usable in this application (namespace ``python``); returns its
        qualified name. ``evaluate`` does this for classes given in ``scorers``."""
        if self._python_scorers is None:
            from .hookspecs import hookimpl

            classes: list[type] = []

            class PythonScorers:
                @hookimpl
                def register_scorers(self, register):
                    for registered in classes:
                        register(registered)

            self.register_plugin(PythonScorers(), name="python")
            self._python_scorers = classes
        if cls not in self._python_scorers:
            self._python_scorers.append(cls)
            self._changed()
        return f"python/{cls.name}"

    def _selectable_name(self, cls: type) -> str:
        """Register a scorer class given in ``scorers=`` and name it the way a user would: bare if unique."""
        qualified = self.register_scorer(cls)
        return self.registry.scorers.display_name(self.registry.scorers.entry(qualified))

    def register_prompt_scorer(self, name: str, *, template: Any, answer: Any = None, **options: Any) -> type:
        """A prompt scorer from a template (a library name, a ``.jinja`` path, or template text with
        ``answer=``), registered in this application; returns the class."""
        from .prompting.scorer import register_prompt_scorer

        cls = register_prompt_scorer(name, template=template, answer=answer, **options)
        self.register_scorer(cls)
        return cls

    def unregister_plugin(self, name: str) -> None:
        self.host.unregister(name)
        self._changed()

    def plugin_commands(self):
        """A click group holding the commands plugins add through ``register_commands``: the
        registry's when it is built already, else collected alone (``evalyard --help`` must not
        build every table)."""
        if self._registry is not None:
            return self._registry.commands()
        if self._commands is None:
            from .registry import collect_commands

            self._commands = collect_commands(self.host)
        return self._commands

    def plugin_versions(self) -> dict[str, str | None]:
        from .version import __version__

        return {i.name: (i.version or __version__) if i.builtin else i.version for i in self.host.infos()}

    # -- storage -------------------------------------------------------------
    def open_store(self, db: str | None = None):
        """The application's one store for this database: every step of a run (its plan, its
        execution, the agreements and outputs after it) and every cell of an experiment share one
        engine and its connection pool, rather than each opening connections of its own."""
        from .store import Store

        url = self.settings.database_url(db)
        with self._stores_lock:
            store = self._stores.get(url)
            if store is None:
                store = self._stores[url] = Store(url)
            return store

    def _existing_store(self, db: str | None):
        """The database when it exists (read for the cache and the history); None for a SQLite
        file not made yet: a forecast creates nothing."""
        url = self.settings.database_url(db)
        if url.startswith("sqlite:///") and not url.startswith("sqlite:///:memory:") \
                and not Path(url[len("sqlite:///"):]).exists():
            return None
        return self.open_store(db)

    # -- suites ---------------------------------------------------------------
    def load_suite(self, source: Any, name: str | None = None, *, format: str | None = None,
                   field_map: dict[str, str] | None = None, qrels: str | None = None) -> tuple[Suite, list[str]]:
        """A suite and the origin of each case from a path, a ``Suite``, or a list of cases/dicts.
        ``format`` names a data format and ``field_map`` maps its columns (a data file's path only);
        ``qrels``, a relevance judgements file filling the cases' ``relevant`` (a path only)."""
        if isinstance(source, Suite):
            return source, source.origins
        if isinstance(source, (str, Path)):
            from .suite_files import load_suite

            return load_suite(source, self.registry, format=format, field_map=field_map, qrels=qrels)
        if isinstance(source, (list, tuple)):
            from .cases import case_from_record, check_unique_ids

            cases = [c if isinstance(c, Case) else case_from_record(c, path="cases", line=i + 1, index=i, field_map={})
                     for i, c in enumerate(source)]
            origins = [f"cases:{i + 1}" for i in range(len(cases))]
            check_unique_ids(cases, origins)
            if not cases:
                raise InputError("no cases given", path="cases")
            suite = Suite(name=name or "cases", cases=cases, source="python", origins=origins)
            return suite, suite.origins
        raise InputError(f"expected a suite file path, a Suite or a list of cases, got {type(source).__name__}")

    # -- runs -------------------------------------------------------------------
    def plan(self, suite: Any, scorers: Iterable[Any] | None = None, *, name: str = "", executor: str | None = None,
             generator: str | None = None, generator_config: dict[str, Any] | None = None,
             judge_model: str | None = None, use_cache: bool = True, max_cost: float | None = None,
             concurrency: int = 4, format: str | None = None, field_map: dict[str, str] | None = None,
             batch: bool = False, calibrated: bool = False,
             default_scorers: list[ScorerSpec] | None = None, epochs: int | None = None,
             reducers: Sequence[tuple[str | None, str]] = (),
             extracts: Sequence[tuple[str | None, str]] = (), qrels: str | None = None,
             allow_remote_media: bool = False) -> "RunPlan":
        """Load and check everything a run needs (scorer names and configs, required fields,
        executors, judge models and templates) without touching the database: bad input
        raises ``evalyard.InputError``. ``calibrated``: every judge with a saved calibration uses
        its fitted threshold (as ``threshold: calibrated`` does for one scorer);
        ``default_scorers``: the scorers when neither ``scorers`` nor the suite names any (a
        data file resumed as the run it started); ``epochs``: trials per case (None: the suite's,
        else 1); ``reducers``: ``(scorer or None for all, spec)`` pairs, over the suite's own;
        ``extracts``: ``(scorer or None for all, extraction step)`` pairs, over the suite's own;
        ``allow_remote_media``: media given by http(s) URL are passed on (else refused)."""
        from .media_gate import MediaGate
        from .runner import check_cases, prepare_generator, prepare_scorers

        loaded, _ = self.load_suite(suite, name=name or None, format=format, field_map=field_map, qrels=qrels)
        if scorers:  # scorer classes given from Python join this application first
            from .scoring import Scorer

            scorers = [self._selectable_name(s) if isinstance(s, type) and issubclass(s, Scorer) else s
                       for s in scorers]
        run_settings = {"judge_model": judge_model or self.settings.judge_model,
                        "prompt_dirs": [*self.settings.prompt_dirs, *loaded.prompt_dirs],
                        "models": loaded.models, "use_cache": use_cache, "max_cost": max_cost, "batch": batch}
        if calibrated:
            run_settings["calibrated"] = True
        if format or field_map or qrels:  # how to read the data file again, should the run stop before storing it all
            run_settings["data"] = {"format": format, "field_map": dict(field_map or {}),
                                    **({"qrels": str(qrels)} if qrels else {})}
        runtime = self.runtime(run_settings, concurrency)
        registry = self.registry
        if loaded.prompt_dirs:  # the suite's own templates may declare scorers too
            registry = with_prompt_scorers(registry, runtime.prompts)
        specs = merge_scorer_choice(loaded.scorers, scorer_specs(scorers)) if scorers else loaded.scorers
        if not specs and default_scorers:
            specs = default_scorers
        epochs = epochs or loaded.epochs or 1
        specs = with_reducers(specs, reducers, epochs, registry.reducers)
        specs = with_extractions(specs, extracts, loaded.extract)
        if epochs > 1:
            run_settings["epochs"] = epochs
        prepared = prepare_scorers(specs, registry, executor or loaded.executor)
        if generator is None and (loaded.generator is not None or generator_config):
            # `--model` (and a grid's cell) names the model under test: it configures the suite's
            # own generator (a conversation generator, say), else the `model` generator
            named, defaults = loaded.generator or ("model", {})
            generator, generator_config = named, {**defaults, **(generator_config or {})}
        prepared_generator = prepare_generator(generator, generator_config or {}, registry) if generator else None
        set_up(runtime, prepared, prepared_generator)
        run_settings["judge_model"] = runtime.chosen_judge_model  # a plugin's default, once judges asked for one
        if runtime.judge_offered:  # so a resumed run (and a worker) does not take it for the user's choice
            run_settings["judge_offered"] = True
        try:
            if runtime.judge_asked and runtime.chosen_judge_model:
                runtime.check_model(runtime.chosen_judge_model)
            gate = MediaGate(runtime, prepared, prepared_generator, allow_remote=allow_remote_media)
            check_cases(loaded, prepared, prepared_generator, media=gate)
        except BaseException:  # a plan that fails closes what it set up
            close_prepared(prepared, prepared_generator)
            raise
        return RunPlan(loaded, prepared, prepared_generator, name, runtime, run_settings)

    def run(self, request: "RunRequest") -> "RunOutcome":
        """Do everything ``request`` asks: forecast, execute or resume, then the checks, clustered
        intervals, judge agreements and outputs (``evalyard.run_service``). Bad input raises
        ``evalyard.InputError`` before anything is stored."""
        from .run_service import execute_request

        return execute_request(self, request)

    def experiment(self, request: "ExperimentRequest") -> "ExperimentOutcome":
        """Run every cell of a grid (or finish a resumed one) and compare the cells
        (``evalyard.experiments``)."""
        from .experiments import run_experiment

        return run_experiment(self, request)

    def stored_result(self, run_id: str, db: str | None = None) -> RunResult:
        """A stored run's summary as ``execute`` returns it, from its stored totals."""
        store = self.open_store(db)
        row = store.get_run(run_id)
        suite = store.suite_of(row)
        totals = row.totals or {}
        return RunResult(run_id=row.id, name=row.name, suite=suite.name, status=row.status, cases=suite.case_count,
                         duration_s=totals.get("duration_s") or 0.0, scorers=totals.get("scorers") or {},
                         generation=totals.get("generation"), usage=totals.get("usage"), _store=store)

    def runtime(self, run_settings: dict[str, Any], concurrency: int, spent: float = 0.0):
        """A run's runtime from its settings (a resumed run: less what it has spent already)."""
        from .runtime import Runtime

        max_cost = run_settings.get("max_cost")
        import functools

        default_judge = functools.partial(self.host.pm.hook.default_judge_model, app=self)
        runtime = Runtime(judge_model=run_settings.get("judge_model"), default_judge=default_judge,
                          prompt_dirs=run_settings.get("prompt_dirs") or (),
                          plugin_templates=plugin_templates(self.registry), model_settings=run_settings.get("models"),
                          use_cache=run_settings.get("use_cache", True),
                          max_cost=None if max_cost is None else max(0.0, max_cost - spent),
                          concurrency=batch_concurrency(run_settings, concurrency), batch=bool(run_settings.get("batch")),
                          app=self, judge_offered=bool(run_settings.get("judge_offered")))
        # what a worker (process, Ray actor) rebuilds this runtime from for its scorers' setup()
        runtime.recipe = RuntimeRecipe(self.settings, run_settings, concurrency, spent)
        return runtime

    def evaluate(self, suite: Any, scorers: Iterable[Any] | None = None, *, db: str | None = None, name: str = "",
                 executor: str | None = None, generator: str | None = None,
                 generator_config: dict[str, Any] | None = None, judge_model: str | None = None,
                 use_cache: bool = True, max_cost: float | None = None, concurrency: int = 4,
                 format: str | None = None, field_map: dict[str, str] | None = None, batch: bool = False,
                 calibrated: bool = False, **options: Any) -> RunResult:
        """Score a suite (a file path, a ``Suite`` or a list of cases) and keep the run.

        Everything is checked before anything is written: bad input raises
        ``evalyard.InputError`` and stores nothing. ``format`` names the data format of a data
        file (default: by its file name's ending) and ``field_map`` maps its columns to case
        fields (``{"reference": "gold"}``); ``batch`` sends model calls as provider batch jobs.
        ``options``: ``max_errors``,
        ``on_progress``, ``on_start`` (see ``execute``).
        """
        from .run_service import RunRequest

        request = RunRequest(suite=suite, scorers=list(scorers) if scorers else None, db=db, name=name,
                             executor=executor, generator=generator, generator_config=generator_config or {},
                             judge_model=judge_model, use_cache=use_cache, max_cost=max_cost, run_to_cap=max_cost is not None,
                             concurrency=concurrency, format=format, field_map=field_map, batch=batch,
                             calibrated=calibrated, **options)
        return self.run(request).result

    def execute(self, plan: "RunPlan", *, db: str | None = None, concurrency: int = 4, max_errors: int | None = None,
                on_progress: Callable[[int], None] | None = None,
                on_start: Callable[[str, int], None] | None = None) -> RunResult:
        """Create the planned run in the database and run its stages."""
        import logging

        from .figures.calibrations import apply_calibrations
        from .runner import Runner

        store = self.open_store(db)
        for warning in apply_calibrations(store, plan.scorers, every_judge=bool(plan.settings.get("calibrated"))):
            logging.getLogger("evalyard").warning("WARNING: %s", warning)  # at once; the summary repeats it
        concurrency = batch_concurrency(plan.settings, concurrency)
        plan.runtime.store = store  # the model layer's response cache is the run's database
        plan.runtime.concurrency = concurrency
        runner = Runner(store, self.registry, concurrency=concurrency, max_errors=max_errors, on_progress=on_progress,
                        runtime=plan.runtime, epochs=plan.settings.get("epochs", 1))
        runner.check_executors(plan.scorers)
        run_id = runner.create(plan.suite, plan.scorers, generator=plan.generator, name=plan.name,
                               source=plan.suite.source, plugin_versions=self.plugin_versions(),
                               settings=_jsonable_settings(plan.settings))
        plan.runtime.run_id = run_id
        if on_start is not None:
            on_start(run_id, plan.suite.case_count * len(plan.scorers))
        return self._execute(runner, run_id, plan.scorers, plan.generator, plan.suite)

    def check_resumable_as(self, run_id: str, plan: "RunPlan", db: str | None = None) -> None:
        """``run SUITE --resume RUN_ID``: the command must describe the run it resumes (same suite
        file and cases, same scorers and generator by fingerprint); an InputError names the first
        difference. Where work runs (the executor) is not part of a fingerprint and may change."""
        from .analysis.comparison import differences

        store = self.open_store(db)
        row = store.get_run(run_id)
        stored_suite = store.suite_of(row)
        where = f"run {row.id}"
        if row.source and plan.suite.source and Path(row.source).resolve() != Path(plan.suite.source).resolve():
            raise InputError(f"{where} was started from {row.source}, not {plan.suite.source}; "
                             f"resume it with `evalyard run {row.source} --resume {row.id}` or `--resume {row.id}`")
        if stored_suite.version != plan.suite.version:
            raise InputError(f"{plan.suite.source or plan.suite.name} has changed since {where} started (its cases "
                             f"differ: version {plan.suite.version[:12]}, the run's {stored_suite.version[:12]}); "
                             "start a new run instead")
        stored = {s["name"]: s for s in row.scorers}
        planned = {p.name: p.describe() for p in plan.scorers}
        if list(stored) != list(planned):
            raise InputError(f"{where} scores {', '.join(stored)}; this command scores {', '.join(planned)}")
        for name, spec in planned.items():
            if stored[name].get("fingerprint") != spec["fingerprint"]:
                what = ", ".join(differences(stored[name].get("fingerprint_data"), spec["fingerprint_data"]))
                raise InputError(f"scorer {name}: differs from {where}'s in {what or 'its fingerprint'}")
        planned_generator = plan.generator.describe() if plan.generator is not None else None
        stored_generator = row.generator or None
        if (planned_generator or {}).get("fingerprint") != (stored_generator or {}).get("fingerprint"):
            def named(g):
                return g["name"] if g else "no generator"

            raise InputError(f"{where} was started with {named(stored_generator)}; this command gives "
                             f"{named(planned_generator)}")

    def resume(self, run_id: str, *, db: str | None = None, concurrency: int = 4, max_errors: int | None = None,
               on_progress: Callable[[int], None] | None = None, executor: str | None = None,
               suite: Suite | None = None) -> RunResult:
        """Finish an interrupted run: generate and score only what is missing, then aggregate.
        ``executor`` moves its non-async scorers to another executor (not part of a fingerprint);
        ``suite``: the run's own suite, checked, should the run have stopped while storing its cases."""
        from .runner import Runner

        store = self.open_store(db)
        row = store.get_run(run_id)
        run_settings = row.settings or {}
        concurrency = batch_concurrency(run_settings, concurrency)
        runtime, registry, prepared, prepared_generator = self._resumed_parts(row, concurrency, executor)
        runtime.store = store
        runtime.run_id = row.id
        runner = Runner(store, registry, concurrency=concurrency, max_errors=max_errors, on_progress=on_progress,
                        runtime=runtime, previous_usage=(row.totals or {}).get("usage"),
                        epochs=run_settings.get("epochs", 1))
        runner.check_executors(prepared)
        stored_suite = store.suite_of(row)
        unstored = None
        if store.candidate_count(row.id) < stored_suite.case_count:  # stopped while storing its cases
            unstored = self._reread_suite(row, stored_suite, suite)
        return self._execute(runner, row.id, prepared, prepared_generator, unstored, stored_suite.name)

    def _resumed_parts(self, row, concurrency: int, executor: str | None):
        """(runtime, registry, prepared scorers, prepared generator) of a stored run, set up as it
        was started (``resume``, and the plan of a resume); the runtime is not on any store yet."""
        from .runner import prepare_generator, prepare_scorers

        if row.status == "completed":
            raise InputError(f"run {row.id} is already completed")
        origin = f"run {row.id}"
        run_settings = row.settings or {}
        spent = ((row.totals or {}).get("usage") or {}).get("cost") or 0.0
        runtime = self.runtime(run_settings, concurrency, spent)
        registry = with_prompt_scorers(self.registry, runtime.prompts) if run_settings.get("prompt_dirs") else \
            self.registry
        specs = [ScorerSpec(s.get("qualified") or s["name"], s["config"], s.get("threshold"), origin=origin,
                            reducer=s.get("reducer"), extract=tuple(s["extract"]) if s.get("extract") else None)
                 for s in row.scorers]
        prepared = prepare_scorers(specs, registry, executor)
        for p, stored in zip(prepared, row.scorers):
            p.spec.name = stored["name"]  # results stay keyed by the name the run was started with
            if executor is None:
                p.executor = stored.get("executor", p.executor)
            p.calibration = stored.get("calibration")  # a calibrated threshold applies to the same value
            p.calibration_used = stored.get("calibration_used")
        prepared_generator = None
        if row.generator:
            prepared_generator = prepare_generator(row.generator["name"], row.generator.get("config") or {},
                                                   registry)
        set_up(runtime, prepared, prepared_generator)
        return runtime, registry, prepared, prepared_generator

    def _reread_suite(self, row, stored_suite, suite: Suite | None) -> Suite:
        """The cases of a run stopped before all were stored: from the command's own suite
        (``run SUITE --resume``), else read again from the run's source, which must not have changed."""
        if suite is None:
            data = (row.settings or {}).get("data") or {}
            try:
                suite, _ = self.load_suite(row.source, format=data.get("format"), field_map=data.get("field_map"),
                                           qrels=data.get("qrels"))
            except InputError as exc:
                raise InputError(f"run {row.id} stopped before all its cases were stored, and its data cannot be "
                                 f"read again: {exc}") from None
        if suite.version != stored_suite.version:
            raise InputError(f"run {row.id} stopped before all its cases were stored, and {row.source} has changed "
                             "since (its cases differ): start a new run instead")
        return suite

    def _execute(self, runner, run_id, prepared, generator, suite: Suite | None, suite_name: str | None = None
                 ) -> RunResult:
        from .runner import RunAborted

        error = None
        try:
            totals = runner.execute(run_id, prepared, generator, suite)
        except RunAborted as exc:
            totals, error = exc.totals, str(exc)
        row = runner.store.get_run(run_id)
        stored_suite = runner.store.suite_of(row)
        return RunResult(run_id=run_id, name=row.name, suite=suite_name or stored_suite.name, status=row.status,
                         cases=stored_suite.case_count, duration_s=totals["duration_s"], scorers=totals["scorers"],
                         error=error, generation=totals.get("generation"), usage=totals.get("usage"),
                         _store=runner.store)

    def forecast(self, plan: "RunPlan | None" = None, *, db: str | None = None, concurrency: int = 4,
                 resume: str | None = None, executor: str | None = None) -> dict[str, Any]:
        """What a run would cost before it runs (``evalyard run --plan``): per scorer and generator,
        model calls and cache hits, tokens, cost online and in batch, and time, each with how it was
        made (``evalyard.forecast``). Nothing is called and nothing is stored; the database is only
        read (not created). ``resume``: plan only what that run still misses (``plan`` is then the
        same command's plan, checked against the run, or None)."""
        from types import SimpleNamespace

        from .forecast import forecast
        from .runner import Runner
        store = self._existing_store(db)
        resume_run = None
        if resume is not None:
            if store is None:
                raise InputError(f"no run {resume}: the database {self.settings.database_url(db)} does not exist")
            if plan is not None:
                self.check_resumable_as(resume, plan, db)
            row = store.get_run(resume)
            run_settings = row.settings or {}
            runtime, registry, prepared, generator = self._resumed_parts(
                row, batch_concurrency(run_settings, concurrency), executor)
            plan = RunPlan(None, prepared, generator, row.name, runtime, run_settings)
            resume_run = SimpleNamespace(id=row.id, suite_id=row.suite_id, suite_name=store.suite_of(row).name)
        else:
            registry = self.registry
        runner = Runner(store, registry, concurrency=concurrency, runtime=plan.runtime)  # its executors only
        try:
            runner.check_executors(plan.scorers)
            return forecast(plan, store, concurrency=concurrency,
                            use_cache=bool(plan.settings.get("use_cache", True)),
                            batch=bool(plan.settings.get("batch")), resume_run=resume_run, executors=runner.executor)
        finally:
            for executor_object in runner._executors.values():
                executor_object.close()
            if resume_run is not None:  # set up here: the command's own plan is the caller's to close
                close_prepared(plan.scorers, plan.generator)

    def pending_count(self, run_id: str, db: str | None = None) -> int:
        """How many (case, scorer) results a resumed run still has to make (for progress bars)."""
        store = self.open_store(db)
        row = store.get_run(run_id)
        return store.suite_of(row).case_count * len(row.scorers) - store.result_count(row.id)

    def compare(self, base: str, new: str, *, db: str | None = None, top: int = 5,
                cluster: str | None = None) -> dict[str, Any]:
        """Case-by-case comparison of two runs (see ``evalyard.compare``); ``fingerprint_changes``
        lists scorers whose fingerprints differ."""
        from .figures.comparisons import compare_runs

        return compare_runs(self.open_store(db), base, new, top=top, cluster=cluster)
