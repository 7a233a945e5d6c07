"""Reference pages generated from the code, and the data the docs tests check them with.

Each directive renders Markdown (MyST) from what the installed evalyard declares:

- ``evalyard-hooks``: every hook specification of ``evalyard.hookspecs`` with its arguments and
  its docstring, the hook's contract;
- ``evalyard-scorers``: every scorer the installed plugins register, with the case fields it
  requires and each config key with its type, default and help (what ``evalyard scorers --json``
  prints);
- ``evalyard-generators``: every generator (what fills a case's candidate, or a plugin's own
  material such as a checklist), with the fields it requires and fills and its config keys;
- ``evalyard-settings``: the core's settings (from ``evalyard.Settings``' declaration) and every
  plugin setting declared through ``register_settings``, each with its environment variable;
- ``evalyard-case-fields``, ``evalyard-export-columns``, ``evalyard-formats``: the data formats.

The functions below (``hooks()``, ``scorers()``, ``generators()``, ``core_settings()``, ``plugin_settings()``,
``commands()``) are what the directives render and what tests/docs/test_reference.py checks.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
import textwrap
from functools import lru_cache
from typing import Any


# -- what the code declares ----------------------------------------------------------------------

@lru_cache(maxsize=1)
def application():
    """An application with every installed plugin, as a user's `evalyard` command makes it."""
    from evalyard import Application, Settings

    return Application(Settings(entry_points=True))


def hooks() -> list[dict[str, Any]]:
    from evalyard import hookspecs

    found = []
    for name, function in vars(hookspecs).items():
        if callable(function) and hasattr(function, "evalyard_spec"):
            options = getattr(function, "evalyard_spec")
            found.append({"name": name, "arguments": list(inspect.signature(function).parameters),
                          "doc": inspect.getdoc(function) or "",
                          "firstresult": bool(options.get("firstresult")), "historic": bool(options.get("historic"))})
    return found


def scorers() -> list[dict[str, Any]]:
    from evalyard.scoring import describe_config

    registry = application().registry
    found = []
    for entry in registry.scorers:
        cls = entry.obj
        found.append({"name": registry.scorers.display_name(entry), "qualified": entry.qualified,
                      "plugin": entry.plugin, "version": cls.version, "description": cls.description or "",
                      "requires": list(cls.requires), "higher_is_better": cls.higher_is_better,
                      "labels": list(cls.labels), "threshold": cls.threshold, "executor": cls.executor,
                      "config": describe_config(cls.Config)})
    return sorted(found, key=lambda s: (s["plugin"], s["qualified"]))


def generators() -> list[dict[str, Any]]:
    from evalyard.scoring import describe_config

    registry = application().registry
    found = [{"name": registry.generators.display_name(entry), "qualified": entry.qualified, "plugin": entry.plugin,
              "version": entry.obj.version, "description": entry.obj.description or "",
              "requires": list(entry.obj.requires), "produces": entry.obj.produces, "fills": list(entry.obj.fills),
              "config": describe_config(entry.obj.Config)} for entry in registry.generators]
    return sorted(found, key=lambda g: (g["plugin"], g["qualified"]))


def core_settings() -> list[dict[str, Any]]:
    """``evalyard.Settings``' fields, each with the sentence its docstring gives it and its variable."""
    from evalyard import Settings

    doc = inspect.getdoc(Settings) or ""
    # The docstring holds one bullet per field: "- ``name``: what it is (``VARIABLE``...)".
    bullets = re.split(r"\n(?=- )", doc.split("\n\n", 1)[1])
    described: dict[str, str] = {}
    for bullet in bullets:
        text = " ".join(line.strip() for line in bullet.strip().removeprefix("- ").splitlines())
        for name in re.findall(r"^``(\w+)``|``(\w+)``:", text):
            for part in name:
                if part:
                    described.setdefault(part, text)
    source = inspect.getsource(Settings.from_env)
    found = []
    for field in dataclasses.fields(Settings):
        text = described.get(field.name, "")
        line = next((line for line in source.splitlines() if line.strip().startswith(f"{field.name}=")), "")
        variables = re.findall(r'"((?:EVALYARD|OTEL)_[A-Z_]+)"', line)
        found.append({"name": field.name, "doc": text, "env": list(dict.fromkeys(variables))})
    return found


def plugin_settings() -> list[dict[str, Any]]:
    from pathlib import Path

    found = []
    for declared, _value in application().plugin_settings:
        default = declared.default
        found.append({"name": declared.key, "type": declared.type.__name__, "plugin": declared.plugin,
                      "default": str(default) if isinstance(default, Path) else default,
                      "env": declared.env, "help": declared.help})
    return found


def commands() -> list[str]:
    """Every command path (``runs export``, ``checklist generate``...) of the installed `evalyard`."""
    import click

    def walk(group: click.Group, prefix: tuple[str, ...]) -> list[str]:
        names = []
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            names.append(" ".join((*prefix, name)))
            if isinstance(command, click.Group):
                names += walk(command, (*prefix, name))
        return names

    return walk(documented_cli(), ())


@lru_cache(maxsize=1)
def documented_cli():
    """The `evalyard` group with the commands of every installed plugin, as sphinx-click sees it."""
    import click

    commands = application().plugin_commands().commands
    group = click.Group("evalyard", help=(
        "Evaluate LLM outputs: run suites of cases through scorers from plugins, keep every run, "
        "compare and report them. Exit codes: 0 ok, 1 a threshold or regression check failed, "
        "2 bad usage or bad input."))
    for name in sorted(commands):
        group.add_command(commands[name], name)
    return group


# -- Markdown for the pages ------------------------------------------------------------------------

def _code(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"`{text}`" if "`" not in text else f"``{text}``"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def hooks_markdown() -> str:
    out = []
    for hook in hooks():
        kinds = [k for k in ("firstresult", "historic") if hook[k]]
        out += [f"## `{hook['name']}`", "",
                f"`{hook['name']}({', '.join(hook['arguments'])})`" + (f" ({', '.join(kinds)})" if kinds else ""), "",
                hook["doc"], ""]
    return "\n".join(out)


def _entry_markdown(item: dict[str, Any], facts: list[str]) -> list[str]:
    """A registered scorer's or generator's entry: its name, description, facts and config keys."""
    facts = [f"plugin `{item['plugin']}`", f"version {item['version']}",
             "requires " + (", ".join(f"`{f}`" for f in item["requires"]) or "nothing"), *facts]
    if item["name"] != item["qualified"]:
        facts.append(f"also `{item['name']}`")
    out = [f"## `{item['qualified']}`", "", item["description"] or "(no description)", "", "; ".join(facts) + ".", ""]
    if item["config"]:
        out += ["| config key | type | default | what it does |", "|---|---|---|---|"]
        for key in item["config"]:
            out.append(f"| `{key['name']}` | {_cell(key['type'])} | {_cell(_code(key['default']))} "
                       f"| {_cell(key.get('help') or '')} |")
        out.append("")
    return out


def scorers_markdown() -> str:
    out = []
    for scorer in scorers():
        facts = ["higher is better" if scorer["higher_is_better"] else "lower is better",
                 f"executor `{scorer['executor']}`"]
        if scorer["threshold"] is not None:
            facts.append(f"threshold {scorer['threshold']}")
        if scorer["labels"]:
            facts.append("labels " + ", ".join(f"`{label}`" for label in scorer["labels"]))
        out += _entry_markdown(scorer, facts)
    return "\n".join(out)


def generators_markdown() -> str:
    out = []
    for generator in generators():
        facts = [f"makes {generator['produces']}"]
        if generator["produces"] == "candidate":
            facts.append("fills " + ", ".join(f"`{f}`" for f in generator["fills"]))
        out += _entry_markdown(generator, facts)
    return "\n".join(out)


def settings_markdown() -> str:
    out = ["## The core's settings", "",
           "Read once when an application is made (`Settings.from_env()` for the command line; "
           "`Application(Settings(...))` in Python, where the environment is not read).", "",
           "| setting | variable | what it is |", "|---|---|---|"]
    for setting in core_settings():
        env = ", ".join(f"`{e}`" for e in setting["env"]) or "-"
        out.append(f"| `{setting['name']}` | {env} | {_cell(setting['doc'])} |")
    out += ["", "## Plugins' settings", "",
            "Declared by the installed plugins through `register_settings`; `evalyard plugins --settings` "
            "prints them with the value in force.", "",
            "| setting | type | default | variable | what it is |", "|---|---|---|---|---|"]
    for setting in plugin_settings():
        out.append(f"| `{setting['name']}` | {setting['type']} | {_cell(_code(setting['default']))} "
                   f"| {'`' + setting['env'] + '`' if setting['env'] else '-'} | {_cell(setting['help'])} |")
    return "\n".join(out) + "\n"


def case_fields_markdown() -> str:
    from evalyard import Case

    out = ["| field | type |", "|---|---|"]
    for field in dataclasses.fields(Case):
        out.append(f"| `{field.name}` | {_cell(str(field.type))} |")
    return "\n".join(out) + "\n"


def export_columns_markdown() -> str:
    from evalyard.store.reading import EXPORT_COLUMNS
    from evalyard.store.trials import TRIAL_COLUMNS

    try:
        from evalyard.exporting import parquet_schema

        columns = list(dict.fromkeys([*TRIAL_COLUMNS, *EXPORT_COLUMNS]))
        types = {field.name: str(field.type) for field in parquet_schema(columns)}
    except Exception:  # pyarrow not installed: the JSONL/CSV columns still hold
        types = {}
    out = ["| column | Parquet type | in |", "|---|---|---|"]
    for column in dict.fromkeys([*TRIAL_COLUMNS, *EXPORT_COLUMNS]):
        where = ("every export" if column in TRIAL_COLUMNS else "results (not --trials)") \
            if column in EXPORT_COLUMNS else "--trials"
        out.append(f"| `{column}` | {types.get(column, '-')} | {where} |")
    return "\n".join(out) + "\n"


def formats_markdown() -> str:
    registry = application().registry
    out = ["| format | plugin | file endings |", "|---|---|---|"]
    for entry in sorted(registry.loaders, key=lambda e: e.qualified):
        endings = ", ".join(f"`{ext}`" for ext in entry.obj.extensions) or "by name only (`--format`)"
        out.append(f"| `{registry.loaders.display_name(entry)}` | `{entry.plugin}` | {endings} |")
    return "\n".join(out) + "\n"


def outputs_markdown() -> str:
    registry = application().registry
    out = ["| output format | plugin | default target | what it writes |", "|---|---|---|---|"]
    for entry in sorted(registry.outputs, key=lambda e: e.qualified):
        output = entry.obj
        target = f"`{output.default_target}`" if output.default_target else "chosen by the format"
        if output.stdout:
            target += ", or standard output"
        out.append(f"| `{registry.outputs.display_name(entry)}` | `{entry.plugin}` | {target} | {_cell(output.help)} |")
    return "\n".join(out) + "\n"


def _directive(render):
    """A directive that parses what ``render()`` returns as MyST Markdown in place (Sphinx and
    docutils are imported here, so the tests can import this module without them)."""
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective

    class Generated(SphinxDirective):
        has_content = False

        def run(self) -> list:
            container = nodes.container()
            self.state.nested_parse(StringList(textwrap.dedent(render()).splitlines(),
                                               source="(generated from the code)"),
                                    self.content_offset, container, match_titles=True)
            return container.children

    Generated.__name__ = render.__name__
    return Generated


#: Repository files that a page of the site stands for (their links from included files go there).
SITE_PAGE_OF = {"README.md": "index.md", "benchmarks/RESULTS.md": "benchmarks.md"}
_LINK = re.compile(r"\]\((?P<target>[^)#\s]+\.md)(?P<anchor>#[^)\s]*)?\)")


def rewrite_repository_links(app, relative_path, parent_docname, content):
    """Included files (the plugins' READMEs, benchmarks/RESULTS.md) link to other files of the
    repository by their path there; point each such link at the page of the site that holds the
    file (a docs page itself, the landing page for README.md, the benchmarks page)."""
    from pathlib import Path

    srcdir = Path(app.srcdir).resolve()
    root = srcdir.parent
    included = (srcdir / relative_path).resolve()

    def replace(match: re.Match) -> str:
        target = (included.parent / match["target"]).resolve()
        try:
            in_repo = target.relative_to(root).as_posix()
        except ValueError:
            return match.group(0)
        page = SITE_PAGE_OF.get(in_repo)
        if page is not None:
            target = srcdir / page
        else:
            return match.group(0)  # a docs page already resolves; other files are left as written
        # MyST resolves a link from the file it was written in (the included one), not the page.
        return f"]({os.path.relpath(target, included.parent)}{match['anchor'] or ''})"

    content[0] = _LINK.sub(replace, content[0])


def setup(app):
    app.connect("include-read", rewrite_repository_links)
    for name, function in {"evalyard-hooks": hooks_markdown, "evalyard-scorers": scorers_markdown,
                           "evalyard-generators": generators_markdown,
                           "evalyard-settings": settings_markdown, "evalyard-case-fields": case_fields_markdown,
                           "evalyard-export-columns": export_columns_markdown,
                           "evalyard-formats": formats_markdown, "evalyard-outputs": outputs_markdown}.items():
        app.add_directive(name, _directive(function))
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def __getattr__(name: str):
    # `evalyard_reference:cli` for sphinx-click: the group is made when the page is built.
    if name == "cli":
        return documented_cli()
    raise AttributeError(name)
