"""Hook specifications: the whole contract between evalyard and its plugins.

Collection hooks hand the plugin a ``register`` callback instead of asking for a
return value: the core calls each plugin's implementation with its own callback,
so it can stamp which plugin registered what (``plugin/name``), refuse a name
registered twice by the same plugin, and validate types. Each hook is documented
in the README's hook table; a test keeps the two in step.
"""

import pluggy

hookspec = pluggy.HookspecMarker("evalyard")
hookimpl = pluggy.HookimplMarker("evalyard")


@hookspec(historic=True)
def register_hookspecs(register):
    """Declare hooks of the plugin's own (as pytest's ``pytest_addhooks``): ``register(namespace)``
    for a module or class whose functions are marked ``@evalyard.hookspec``. Other plugins then
    implement them with ``@evalyard.hookimpl``, and they load, trace and block like the core's
    hooks; the declaring plugin asks for what was registered through
    ``runtime.registered(hook_name)``. Called for every plugin as it loads."""


@hookspec
def register_scorers(register):
    """Register scorer classes: ``register(MyScorer)`` for each ``evalyard.Scorer`` subclass.

    A scorer that calls models may also say which calls it would make for a case without making
    them: ``planned_requests(case)`` returns ``evalyard.PlannedRequest`` objects (made with
    ``runtime.models.planned(...)``, or ``PromptScorer.planned_judge(case)`` per judgement), or
    None when a call depends on an earlier answer. ``evalyard run --plan`` counts them, finds
    their answers in the response cache and prices them; a scorer without it is estimated."""


@hookspec
def register_generators(register):
    """Register generator classes: ``register(MyGenerator)`` for each ``evalyard.Generator`` subclass
    (``planned_requests(case)`` as for scorers: the calls generating would make, not made)."""


@hookspec
def register_prompt_templates(register):
    """Register prompt templates: ``register(name, text)`` or ``register(directory)``."""


@hookspec
def register_loaders(register):
    """Register data formats: ``register(name, load_function, extensions=(".ext", ...))``.

    A file is read by the format named in the suite (``format:``) or on the CLI (``--format``),
    else by the format claiming the longest ending of its name (``.trust.jsonl`` before
    ``.jsonl``). Content is never sniffed, and the core's endings stay the core's: installing a
    plugin never changes how another format is read. ``register(".ext", load_function)`` is
    short for a format named ``ext`` claiming ``.ext``.

    ``load_function(path, field_map)`` returns a list of ``evalyard.Case``, a pair
    ``(cases, origins)`` where ``origins[i]`` is ``"file:line"`` of case i (so later
    checks can name the line), or an iterator (a generator) of ``(case, origin)`` pairs.
    An iterator streams: a run reads the file more than once (a check pass, then the
    stored cases), a window at a time, so a file of millions of cases never sits in memory;
    each call must start from the beginning. It raises ``evalyard.InputError`` naming file,
    line and field on bad input. ``jsonl``, ``json`` and ``csv`` are built-ins (``jsonl`` and
    ``csv`` stream).
    """


@hookspec
def register_scorer_kinds(register):
    """Register kinds of scorer a prompt template can declare: ``register(kind, factory)``, where
    ``factory(template)`` returns a Scorer class for a template whose header says
    ``scorer: {kind: KIND, name: ..., options: {...}}`` (a checklist scoring prompt, say). The
    core's own kind, ``prompt``, is a judge."""


@hookspec
def register_executors(register):
    """Register executors: ``register(name, factory)``; ``factory(concurrency)`` returns an
    ``evalyard.executors.Executor`` (where scorer batches run: threads, processes, a cluster).
    One that runs batches elsewhere sends ``evalyard.ScorerRef`` and returns its ``Outcome``."""


@hookspec
def register_model_providers(register):
    """Register model providers: ``register(name, handler)`` sends the model strings ``NAME/...``
    to ``handler``, a litellm custom handler (``completion`` / ``acompletion``; subclassing
    ``litellm.CustomLLM`` is not needed, so registering imports nothing heavy). A handler may
    also have ``capabilities(model)``, returning what the model layer should assume when a
    suite's ``models:`` settings say nothing: ``supports_schema``, ``supports_logprobs``,
    ``concurrency``, ``reasoning``; and ``check(model)``, which raises (its message one line)
    when the handler cannot serve ``model`` (a file not installed, a cluster that lacks it): a
    run's judges ask it before the run is stored. One prefix belongs to one plugin. The core's
    scripted test model (``scripted/PATH``) and the local-model plugin (``local/NAME``) register
    this way."""


@hookspec(firstresult=True)
def default_judge_model():
    """Return the model string judges use when none is configured (``--judge-model``,
    ``EVALYARD_JUDGE_MODEL``, a scorer's ``model``), or ``(model, note)`` with the sentence to
    say once about it, or None. The first plugin with an answer wins; e.g. the local-model
    plugin answers with its best installed model."""


@hookspec
def register_commands(cli):
    """Add click commands or groups to the ``evalyard`` command-line group."""
