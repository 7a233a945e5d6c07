"""Hook specifications: the whole contract between evalyard and its plugins.

Collection hooks hand the plugin a ``register`` callback instead of asking for a
return value: the core calls each plugin's implementation with its own callback,
so it can stamp which plugin registered what (``plugin/name``), refuse a name
registered twice by the same plugin, and validate types. Each hook is documented
in the README's hook table; a test keeps the two in step.

Every hook also receives ``app``, the ``Application`` calling it (as datasette hands its hooks
``datasette``): its settings (``app.settings``), plugins' typed settings (``app.setting(key)``).
An implementation may leave out any argument it does not use.
"""

import pluggy

hookspec = pluggy.HookspecMarker("evalyard")
hookimpl = pluggy.HookimplMarker("evalyard")


@hookspec(historic=True)
def register_hookspecs(register, app):
    """Declare hooks of the plugin's own (as pytest's ``pytest_addhooks``): ``register(namespace)``
    for a module or class whose functions are marked ``@evalyard.hookspec``. Other plugins then
    implement them with ``@evalyard.hookimpl``, and they load, trace and block like the core's
    hooks; the declaring plugin asks for what was registered through
    ``runtime.registered(hook_name)``. Called for every plugin as it loads."""


@hookspec
def register_scorers(register, app):
    """Register scorer classes: ``register(MyScorer)`` for each ``evalyard.Scorer`` subclass.

    The registry names it ``<the plugin's namespace>/<name>``; the namespace is the plugin's
    entry-point name. ``register(MyScorer, namespace="criteria")`` files it under a second
    namespace of the plugin's (the judge plugin's twelve aspects are ``criteria/<aspect>``);
    the ``register`` of generators, prompt templates, loaders, scorer kinds and executors takes
    the same ``namespace=`` (model providers, settings and commands are named otherwise).
    The rules, the same for every such hook:

    - a namespace belongs to one plugin: claiming another loaded plugin's own namespace, or one
      another plugin claimed already, is a ``PluginError`` naming both plugins; ``prompts`` is
      reserved (the user's prompt scorers); a namespace is a name without '/';
    - ``EVALYARD_BLOCK_PLUGINS`` names an extra namespace as it names a plugin: blocking
      ``criteria`` drops what is registered under ``criteria`` only, blocking the plugin
      (``judge``) drops everything it registers, extra namespaces included;
    - ``EVALYARD_LOAD_PLUGINS`` picks installed plugins and their extra namespaces: ``judge``
      loads ``judge/*`` only, ``judge,criteria`` both; ``criteria`` alone loads neither, since
      a namespace comes with its plugin (a name matching no installed plugin is ignored, as
      always). The allow-list does not apply to in-process and extra plugins, nor to their
      namespaces;
    - ``evalyard plugins`` lists each plugin's namespaces (``namespaces`` in ``--json``).

    A scorer that calls models may also say which calls it would make for a case without making
    them: ``planned_requests(case)`` returns ``evalyard.PlannedRequest`` objects (made with
    ``runtime.models.planned(...)``, or ``PromptScorer.planned_judge(case)`` per judgement), or
    None when a call depends on an earlier answer. ``evalyard run --plan`` counts them, finds
    their answers in the response cache and prices them; a scorer without it is estimated."""


@hookspec
def register_generators(register, app):
    """Register generator classes: ``register(MyGenerator)`` for each ``evalyard.Generator`` subclass
    (``planned_requests(case)`` as for scorers: the calls generating would make, not made;
    ``namespace=`` as for scorers)."""


@hookspec
def register_prompt_templates(register, app):
    """Register prompt templates: ``register(name, text)`` or ``register(directory)`` (``namespace=``
    as for scorers)."""


@hookspec
def register_loaders(register, app):
    """Register data formats: ``register(name, load_function, extensions=(".ext", ...))``.

    A file is read by the format named in the suite (``format:``) or on the CLI (``--format``),
    else by the format claiming the longest ending of its name (``.trust.jsonl`` before
    ``.jsonl``). Content is never sniffed, and the core's endings stay the core's: installing a
    plugin never changes how another format is read. ``register(".ext", load_function)`` is
    short for a format named ``ext`` claiming ``.ext``; ``namespace=`` as for scorers.

    ``load_function(path, field_map)`` returns a list of ``evalyard.Case``, a pair
    ``(cases, origins)`` where ``origins[i]`` is ``"file:line"`` of case i (so later
    checks can name the line), or an iterator (a generator) of ``(case, origin)`` pairs.
    An iterator streams: a run reads the file more than once (a check pass, then the
    stored cases), a window at a time, so a file of millions of cases never sits in memory;
    each call must start from the beginning. It raises ``evalyard.InputError`` naming file,
    line and field on bad input. ``jsonl``, ``json``, ``csv``, ``otel`` and ``otel-trace``
    (OpenTelemetry GenAI traces), ``trec`` and ``run-json`` (retrieval runs) are built-ins (all
    but ``json`` and ``run-json`` stream).
    """


@hookspec
def register_outputs(register, app):
    """Register output formats (sinks), as ``register_loaders`` registers input formats:
    ``register(name, write, *, default_target=None, stdout=False, check=None, help="", trials=False)``.

    ``write(source, target)`` writes one run: ``source`` is an ``evalyard.RunSource``
    (``source.run``, ``source.suite()``, ``source.rows()``: the store's streaming query of the
    results as tuples of ``source.columns``; ``source.open_text(target)`` /
    ``open_binary(target)`` open a file, or standard output for ``"-"``). ``target`` is what the
    user gave (``run --output NAME=TARGET``, ``runs export --format NAME -o TARGET``), else
    ``default_target`` with ``{run_id}`` filled in (None: the sink chooses, as OpenTelemetry
    takes the configured endpoint). It returns None or a one-line warning to show; it never
    changes the run's exit code. ``stdout=True``: ``runs export`` without ``-o`` writes to
    standard output. ``check()`` raises ``evalyard.ConfigError`` when the sink cannot work here
    (a missing library): asked before a run starts. ``trials=True``: the sink writes whatever
    ``source.columns`` names, so ``runs export --trials`` can use it (``source.trials`` is then
    true and the rows are the run's trials). ``jsonl``, ``csv``, ``parquet``, ``junit``,
    ``otel`` and ``html`` are built-ins; ``namespace=`` as for scorers."""


@hookspec
def register_scorer_kinds(register, app):
    """Register kinds of scorer a prompt template can declare: ``register(kind, factory)``, where
    ``factory(template)`` returns a Scorer class for a template whose header says
    ``scorer: {kind: KIND, name: ..., options: {...}}`` (a checklist scoring prompt, say). The
    core's own kind, ``prompt``, is a judge. ``namespace=`` as for scorers."""


@hookspec
def register_executors(register, app):
    """Register executors: ``register(name, factory)``; ``factory(concurrency)`` returns an
    ``evalyard.executors.Executor`` (where scorer batches run: threads, processes, a cluster).
    One that runs batches elsewhere sends ``evalyard.ScorerRef`` and returns its ``Outcome``.
    ``namespace=`` as for scorers."""


@hookspec
def register_reducers(register, app):
    """Register epoch reducers (how a case's trials under ``--epochs N`` make its one score):
    ``register(name, reduce, params=(), needs_k=False)``. ``reduce(scored, reducer, epochs)``
    gets the case's scored trials (``evalyard.Trial``: ``value``, ``label``, ``passed``, and
    ``number``, the value as inspect_ai reads it; never empty: failed trials are left out, and
    trials whose values are dicts come one key at a time), the parsed ``evalyard.Reducer`` (its
    ``k`` and ``value`` as the user gave them) and how many trials the case had; it returns the
    case's value as a number, or an ``evalyard.Reduced`` (a value, a label, whether it passed, or
    an error). ``params`` names which of ``k`` and ``value`` the reducer takes (``NAME:k=3``),
    ``needs_k`` makes ``k`` required. ``--reducer NAME`` and a suite's ``reducer:`` find it by name
    (``PLUGIN/NAME`` when two plugins register one name). ``mean``, ``median``, ``mode``,
    ``max``, ``min``, ``pass_at_k`` and ``at_least_k`` are built-ins; ``namespace=`` as for
    scorers."""


@hookspec
def register_model_providers(register, app):
    """Register model providers: ``register(name, handler)`` sends the model strings ``NAME/...``
    to ``handler``, a litellm custom handler (``completion`` / ``acompletion``; subclassing
    ``litellm.CustomLLM`` is not needed, so registering imports nothing heavy). A handler may
    also have ``capabilities(model)``, returning what the model layer should assume when a
    suite's ``models:`` settings say nothing: ``supports_schema``, ``supports_logprobs``,
    ``supports_seed``, ``supports_tools`` (it answers with tool calls when sent ``tools``),
    ``concurrency``, ``reasoning``; and ``check(model)``, which raises (its message one line)
    when the handler cannot serve ``model`` (a file not installed, a cluster that lacks it): a
    run's judges ask it before the run is stored. One prefix belongs to one plugin. The core's
    scripted test model (``scripted/PATH``) and the local-model plugin (``local/NAME``) register
    this way."""


@hookspec
def wrap_model_provider(name, handler, app):
    """Take over another plugin's model provider: return a handler to use instead of
    ``handler`` for the model strings ``NAME/...``, or None to leave it. Called once per
    registered provider and implementing plugin, in the order plugins load (built-ins, then
    entry points, then extra plugins), each seeing the previous answer; a blocked plugin's
    provider is never registered, so nothing wraps it (evalyard-ray serves ``local/`` from its
    cluster this way when ``EVALYARD_RAY_LOCAL_MODELS`` is set)."""


@hookspec
def register_settings(register, app):
    """Declare the plugin's typed settings: ``register(name, type, default, env=None, help="")``
    with ``type`` one of ``str``, ``int``, ``float``, ``bool``, ``pathlib.Path``, ``list``
    (``os.pathsep``-separated). The application reads them once: a value given in
    ``Settings(plugin_settings={"NAMESPACE.NAME": value})``, else the environment variable
    ``env``, else the default; a value that does not parse stops the command (exit 2) naming the
    variable. The plugin reads ``app.setting("NAMESPACE.NAME")`` (or ``runtime.setting``);
    ``evalyard plugins --settings`` lists them."""


@hookspec(firstresult=True)
def default_judge_model(app):
    """Return the model string judges use when none is configured (``--judge-model``,
    ``EVALYARD_JUDGE_MODEL``, a scorer's ``model``), or ``(model, note)`` with the sentence to
    say once about it, or None. The first plugin with an answer wins; e.g. the local-model
    plugin answers with its best installed model."""


@hookspec
def register_commands(cli, app):
    """Add click commands or groups to the ``evalyard`` command-line group."""
