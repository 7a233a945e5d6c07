"""What plugins registered, built once per application: scorers, generators, prompt templates,
loaders, output formats, executors, scorer kinds, epoch reducers, model providers, typed settings, commands and the tables of
hooks plugins declare themselves (``registered``).

Every entry is namespaced by the plugin that registered it: ``lexicon/exact_match``. A
bare name (``exact_match``) works wherever it is unique; two plugins may register the
same bare name, and only using that ambiguous bare name is an error (it lists the
qualified names). The same qualified name registered twice is a plugin bug and fails
at once. A plugin may also register under a second namespace of its own (``register(cls,
namespace="criteria")``), which then belongs to it as its own namespace does (``claim_namespace``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Generic, TypeVar

from .analysis.reducers import PARAMETERS, ReducerKind
from .errors import PluginError, UnknownNameError
from .outputs import OutputFormat
from .plugin_settings import PluginSettings
from .plugins import CORE_NAMESPACE, PluginHost
from .scoring import CASE_FIELDS, PLATFORM_KEYS, Generator, Scorer, config_field_names

T = TypeVar("T")

#: Namespaces no plugin may claim: the registry gives them to something else.
RESERVED_NAMESPACES = {"prompts": "the scorers of the user's prompt directories"}


@dataclass
class Entry(Generic[T]):
    name: str  # bare name
    obj: T
    plugin: str  # the plugin manager's name for the plugin
    namespace: str

    @property
    def qualified(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass
class Table(Generic[T]):
    """Entries of one kind, addressable as ``namespace/name`` or by a unique bare name."""

    kind: str
    entries: dict[str, Entry[T]] = field(default_factory=dict)  # qualified name -> entry

    def add(self, name: str, obj: T, plugin: str, namespace: str) -> None:
        entry = Entry(name, obj, plugin, namespace)
        if entry.qualified in self.entries:
            raise PluginError(f"plugin {plugin!r} registered {self.kind} {name!r} twice")
        self.entries[entry.qualified] = entry

    def entry(self, name: str) -> Entry[T]:
        if "/" in name:
            found = self.entries.get(name)
            if found is None:
                raise UnknownNameError(f"unknown {self.kind} {name!r} (known: {self.known()})")
            return found
        matches = [e for e in self.entries.values() if e.name == name]
        if not matches:
            raise UnknownNameError(f"unknown {self.kind} {name!r} (known: {self.known()})")
        if len(matches) > 1:
            qualified = ", ".join(sorted(e.qualified for e in matches))
            raise UnknownNameError(f"{self.kind} name {name!r} is ambiguous: use one of {qualified}")
        return matches[0]

    def get(self, name: str) -> T:
        return self.entry(name).obj

    def __getitem__(self, name: str) -> Entry[T]:
        return self.entry(name)

    def __contains__(self, name: str) -> bool:
        try:
            self.entry(name)
        except UnknownNameError:
            return False
        return True

    def __iter__(self):
        return iter(sorted(self.entries.values(), key=lambda e: (e.name, e.qualified)))

    def __len__(self) -> int:
        return len(self.entries)

    def display_name(self, entry: Entry[T]) -> str:
        """The bare name when it is unique, else the qualified one."""
        same = sum(1 for e in self.entries.values() if e.name == entry.name)
        return entry.name if same == 1 else entry.qualified

    def known(self) -> str:
        """The names to use, for an error message: ``a, b, x/c, y/c``."""
        names = sorted({self.display_name(e) for e in self.entries.values()})
        return ", ".join(names) or "none installed"


@dataclass(frozen=True)
class DataFormat:
    """A data format: its loader and the file name endings it claims (``.jsonl``, ``.trust.json``)."""

    name: str
    load: Callable
    extensions: tuple[str, ...]


@dataclass
class Registry:
    scorers: Table[type[Scorer]] = field(default_factory=lambda: Table("scorer"))
    generators: Table[type[Generator]] = field(default_factory=lambda: Table("generator"))
    prompt_templates: Table[Any] = field(default_factory=lambda: Table("prompt template"))
    loaders: Table[DataFormat] = field(default_factory=lambda: Table("data format"))
    outputs: Table[OutputFormat] = field(default_factory=lambda: Table("output format"))
    executors: Table[Callable] = field(default_factory=lambda: Table("executor"))
    scorer_kinds: Table[Callable] = field(default_factory=lambda: Table("scorer kind"))
    reducers: Table[ReducerKind] = field(default_factory=lambda: Table("reducer"))
    #: model providers by model-string prefix (after ``wrap_model_provider``)
    providers: dict[str, Any] = field(default_factory=dict)
    settings: PluginSettings = field(default_factory=PluginSettings)
    host: PluginHost | None = field(default=None, repr=False)
    #: namespaces plugins claimed besides their own (``criteria`` -> ``judge``), loaded or not
    claimed: dict[str, str] = field(default_factory=dict)
    _registered: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    _commands: Any = field(default=None, repr=False)

    def namespaces(self, plugin: str) -> list[str]:
        """The namespaces ``plugin`` registers under in this application: its own, then the extra
        ones it claimed that are not blocked."""
        extra = sorted(n for n, owner in self.claimed.items()
                       if owner == plugin and self.host.loads_namespace(plugin, n))
        return [self.host.namespace(plugin), *extra]

    def claim_namespace(self, plugin: str, namespace: str | None) -> str | None:
        """The namespace an entry ``plugin`` registers goes under: its own (``namespace`` None), or
        an extra one, which then belongs to ``plugin`` alone; None when that namespace is blocked
        or left out by the allow-list (the entry is then dropped, as a blocked plugin's would be)."""
        own = self.host.namespace(plugin)
        if namespace is None or namespace == own:
            return own
        if not isinstance(namespace, str) or not namespace or "/" in namespace:
            raise PluginError(f"plugin {plugin!r}: namespace= takes a non-empty name without '/'; got {namespace!r}")
        if namespace in RESERVED_NAMESPACES:
            raise PluginError(f"plugin {plugin!r} registers under the namespace {namespace!r}, which is reserved "
                              f"for {RESERVED_NAMESPACES[namespace]}")
        owner = self.claimed.get(namespace) or self.host.owner(namespace, other_than=plugin)
        if owner not in (None, plugin):
            raise PluginError(f"plugin {plugin!r} registers under the namespace {namespace!r}, which belongs to "
                              f"plugin {owner!r}")
        self.claimed[namespace] = plugin
        return namespace if self.host.loads_namespace(plugin, namespace) else None

    def registered(self, hook_name: str, what: str = "entry") -> dict[str, Any]:
        """What plugins register through a hook of the ``register(name, obj)`` shape that a plugin
        declared (``register_hookspecs``), by name; collected on first use, like every table here."""
        if hook_name not in self._registered:
            self._registered[hook_name] = self.host.collect(hook_name, what)
        return self._registered[hook_name]

    def commands(self):
        """A click group holding the commands plugins (the core's built-in one included) add
        through ``register_commands``; built on first use (click is imported only then). A
        command name belongs to one plugin."""
        if self._commands is None:
            self._commands = collect_commands(self.host)
        return self._commands

    def scorer(self, name: str) -> type[Scorer]:
        return self.scorers.get(name)

    def generator(self, name: str) -> type[Generator]:
        return self.generators.get(name)

    def loader_for(self, path: str | Path, format: str | None = None) -> Entry[DataFormat]:
        """The data format to read ``path`` with: the one named (``format:`` / ``--format``), else
        the one claiming the longest ending of the file name. The content is never sniffed, and a
        plugin never takes over an ending the core claims, so installing a plugin never changes
        how another format is read; two plugins claiming one ending must be chosen between by name."""
        if format:
            return self.loaders.entry(format)
        name = Path(path).name.lower()
        claims = [(ext, e) for e in self.loaders.entries.values() for ext in e.obj.extensions if name.endswith(ext)]
        if not claims:
            raise UnknownNameError(f"no data format for {Path(path).name} (known formats: {self.known_formats()}; "
                                   "or give one with --format / format:)")
        longest = max(len(ext) for ext, _ in claims)
        found = [e for ext, e in claims if len(ext) == longest]
        core = [e for e in found if e.namespace == CORE_NAMESPACE]
        if len(found) > 1 and len(core) == 1:
            found = core
        if len(found) > 1:
            names = ", ".join(sorted(self.loaders.display_name(e) for e in found))
            raise UnknownNameError(f"files ending in {found[0].obj.extensions[0]} are claimed by several data "
                                   f"formats ({names}): choose one with --format NAME or format: NAME")
        return found[0]

    def known_formats(self) -> str:
        """``csv (.csv), json (.json), ...`` for error messages, from what plugins registered."""
        return ", ".join(f"{self.loaders.display_name(e)} ({', '.join(e.obj.extensions) or 'by name only'})"
                         for e in self.loaders) + ", YAML suites (.yaml, .yml)"


def check_scorer(cls: Any, plugin: str) -> str:
    if not (isinstance(cls, type) and issubclass(cls, Scorer)):
        raise PluginError(f"plugin {plugin!r} registered {cls!r} as a scorer; expected a subclass of evalyard.Scorer")
    if not cls.name or not isinstance(cls.name, str) or "/" in cls.name:
        raise PluginError(f"plugin {plugin!r}: scorer class {cls.__name__} has no name (or a name with '/')")
    for required in cls.requires:
        base = required.split(".", 1)[0]
        if base not in CASE_FIELDS:
            raise PluginError(f"plugin {plugin!r}: scorer {cls.name!r} requires unknown case field {required!r}")
    clash = sorted(PLATFORM_KEYS & set(config_field_names(cls.Config)))
    if clash:
        raise PluginError(f"plugin {plugin!r}: scorer {cls.name!r} has a config option {clash[0]!r}, which is a "
                          f"platform key ({', '.join(sorted(PLATFORM_KEYS))}); rename it")
    return cls.name


def read_settings(host: PluginHost) -> PluginSettings:
    """Plugins' declared settings (``register_settings``), read once from the host's settings."""
    found = PluginSettings()

    def settings_register(plugin: str):
        def register(name: Any, type: Any, default: Any = None, *, env: str | None = None, help: str = "") -> None:
            found.declare(plugin, host.namespace(plugin), name, type, default, env=env, help=help)
        return register

    host.call_per_plugin("register_settings", register=settings_register)
    found.read(host.settings.plugin_settings, host.settings.env)
    return found


def collect_providers(host: PluginHost, added: dict[str, Any] | None = None) -> dict[str, Any]:
    """Model providers by prefix: the plugins' (``register_model_providers``), those added from
    Python (``Application.add_model_provider``) on top, then each offered to the plugins that
    wrap providers (``wrap_model_provider``) in the order plugins load."""
    from .models.providers import check_provider

    providers = host.collect("register_model_providers", "model provider",
                             check=lambda name, handler, plugin: check_provider(name, handler, f"plugin {plugin!r}"))
    providers.update(added or {})
    for name in list(providers):
        for plugin, answers in host.call_per_plugin(
                "wrap_model_provider", name=lambda plugin, n=name: n, handler=lambda plugin, n=name: providers[n]):
            for replacement in answers:  # pluggy leaves out an implementation's None
                check_provider(name, replacement, f"plugin {plugin!r}")
                providers[name] = replacement
    return providers


def collect_commands(host: PluginHost):
    import click

    per_plugin: list[tuple[str, click.Group]] = []

    def group_for(plugin: str) -> click.Group:
        per_plugin.append((plugin, click.Group()))
        return per_plugin[-1][1]

    host.call_per_plugin("register_commands", cli=group_for)
    group, added_by = click.Group(), {}
    for plugin, commands in per_plugin:
        for name, command in commands.commands.items():
            if name in added_by:
                raise PluginError(f"plugin {plugin!r} adds the command {name!r}, which plugin "
                                  f"{added_by[name]!r} added already")
            added_by[name] = plugin
            group.add_command(command, name)
    return group


def build(host: PluginHost, settings: PluginSettings | None = None,
          added_providers: dict[str, Any] | None = None) -> Registry:
    """Call every registration hook through pluggy, one call per implementing plugin. Plugins'
    settings come first (``settings``, when the application read them already): the other hooks
    may read them."""
    reg = Registry(host=host, settings=settings if settings is not None else read_settings(host))

    def add(table: Table, name: str, obj: Any, plugin: str, namespace: str | None) -> None:
        """Every ``register`` callback files its entry here, under the namespace it may claim."""
        claimed = reg.claim_namespace(plugin, namespace)
        if claimed is not None:
            table.add(name, obj, plugin, claimed)

    def scorer_register(plugin: str):
        def register(cls: Any, *, namespace: str | None = None) -> None:
            add(reg.scorers, check_scorer(cls, plugin), cls, plugin, namespace)
        return register

    def generator_register(plugin: str):
        def register(cls: Any, *, namespace: str | None = None) -> None:
            if not (isinstance(cls, type) and issubclass(cls, Generator) and cls.name):
                raise PluginError(f"plugin {plugin!r} registered {cls!r}; expected a named evalyard.Generator subclass")
            add(reg.generators, cls.name, cls, plugin, namespace)
        return register

    def template_register(plugin: str):
        # One naming rule: the registry names a plugin's template `<namespace>/<bare name>`, so a
        # plugin registers bare names only.
        def register(name_or_dir: Any, text: str | None = None, *, namespace: str | None = None) -> None:
            namespace = reg.claim_namespace(plugin, namespace)
            if text is None:
                directory = Path(name_or_dir)
                if not directory.is_dir():
                    raise PluginError(f"plugin {plugin!r}: prompt template directory {directory} does not exist")
                files = sorted(directory.glob("*.j2")) + sorted(directory.glob("*.jinja"))
                named = [(path.stem, path) for path in files]
            else:
                named = [(str(name_or_dir), text)]
            for name, source in named:
                if not name or "/" in name:
                    raise PluginError(f"plugin {plugin!r}: prompt template name {name!r} must be bare (no '/'): "
                                      f"the registry names it <namespace>/<name>")
                if namespace is not None:  # None: a blocked namespace, its templates left out
                    reg.prompt_templates.add(name, source, plugin, namespace)
        return register

    def loader_register(plugin: str):
        def register(name: str, function: Callable, extensions: tuple[str, ...] | list[str] = (), *,
                     namespace: str | None = None) -> None:
            if isinstance(name, str) and name.startswith(".") and not extensions:  # register(".ext", load)
                name, extensions = name[1:], (name,)
            extensions = tuple(e.lower() for e in extensions) if not isinstance(extensions, str) else ()
            if (not isinstance(name, str) or not name or "/" in name or name.startswith(".") or not callable(function)
                    or not all(e.startswith(".") and len(e) > 1 for e in extensions)):
                raise PluginError(f"plugin {plugin!r}: register(name, function, extensions=('.ext', ...)) needs a "
                                  "format name, a callable and file endings that start with '.'")
            add(reg.loaders, name, DataFormat(name, function, extensions), plugin, namespace)
        return register

    def output_register(plugin: str):
        def register(name: str, write: Callable, *, default_target: str | None = None, stdout: bool = False,
                     check: Callable | None = None, help: str = "", trials: bool = False,
                     namespace: str | None = None) -> None:
            if (not isinstance(name, str) or not name or "/" in name or "=" in name or not callable(write)
                    or (check is not None and not callable(check))):
                raise PluginError(f"plugin {plugin!r}: register(name, write) needs an output format name (no '/' "
                                  "or '=') and a callable")
            add(reg.outputs, name, OutputFormat(name, write, default_target, bool(stdout), check, help, bool(trials)),
                plugin, namespace)
        return register

    def executor_register(plugin: str):
        def register(name: str, factory: Callable, *, namespace: str | None = None) -> None:
            if not isinstance(name, str) or not name or "/" in name or not callable(factory):
                raise PluginError(f"plugin {plugin!r}: register(name, factory) needs a name and a callable")
            add(reg.executors, name, factory, plugin, namespace)
        return register

    host.call_per_plugin("register_scorers", register=scorer_register)
    host.call_per_plugin("register_generators", register=generator_register)
    host.call_per_plugin("register_prompt_templates", register=template_register)
    host.call_per_plugin("register_loaders", register=loader_register)
    host.call_per_plugin("register_outputs", register=output_register)
    def scorer_kind_register(plugin: str):
        def register(kind: str, factory: Callable, *, namespace: str | None = None) -> None:
            if not isinstance(kind, str) or not kind or kind == "prompt" or not callable(factory):
                raise PluginError(f"plugin {plugin!r}: register(kind, factory) needs a kind other than 'prompt' "
                                  "and a callable")
            add(reg.scorer_kinds, kind, factory, plugin, namespace)
        return register

    def reducer_register(plugin: str):
        def register(name: str, reduce: Callable, *, params: tuple[str, ...] | list[str] = (), needs_k: bool = False,
                     namespace: str | None = None) -> None:
            taken = frozenset(params) if not isinstance(params, str) else frozenset({params})
            if (not isinstance(name, str) or not name or "/" in name or ":" in name or not callable(reduce)
                    or not taken <= PARAMETERS or (needs_k and "k" not in taken)):
                raise PluginError(f"plugin {plugin!r}: register(name, reduce, params=('k', 'value'), needs_k=False) "
                                  "needs a reducer name (no '/' or ':'), a callable, and parameters among k and value")
            add(reg.reducers, name, ReducerKind(name, reduce, taken, bool(needs_k)), plugin, namespace)
        return register

    host.call_per_plugin("register_executors", register=executor_register)
    host.call_per_plugin("register_scorer_kinds", register=scorer_kind_register)
    host.call_per_plugin("register_reducers", register=reducer_register)
    reg.providers = collect_providers(host, added_providers)
    return reg
