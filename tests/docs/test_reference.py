"""Completeness of the reference, in datasette's manner: every command, hook, scorer and setting
has its entry, and each entry says what a reader needs (a hook's contract, a config key's help,
a setting's variable). The reference pages are generated from the same functions at build time,
so a thing missing here is missing from the site."""

from __future__ import annotations

import inspect
import re

import pytest

from docs_helpers import page, reference


@pytest.fixture
def ref(installed_plugins):
    module = reference()
    module.application.cache_clear()
    module.documented_cli.cache_clear()
    return module


def test_the_reference_pages_use_the_generators():
    assert "```{click} evalyard_reference:cli" in page("reference/cli.md")
    assert ":nested: full" in page("reference/cli.md")
    assert "```{evalyard-hooks}" in page("reference/hooks.md")
    assert "```{evalyard-scorers}" in page("reference/scorers.md")
    assert "```{evalyard-generators}" in page("reference/generators.md")
    assert "```{evalyard-settings}" in page("reference/settings.md")
    for directive in ("evalyard-case-fields", "evalyard-formats", "evalyard-export-columns", "evalyard-outputs"):
        assert f"```{{{directive}}}" in page("reference/formats.md")


def test_every_command_has_help(ref):
    """Every command of the installed `evalyard` (plugins' included) is in the documented group,
    and has a help text for sphinx-click to show."""
    from click.testing import CliRunner

    from evalyard.cli import cli

    paths = ref.commands()
    top = {path for path in paths if " " not in path}
    listed = CliRunner().invoke(cli, ["--help"])
    assert listed.exit_code == 0
    for name in top:
        assert re.search(rf"^  {re.escape(name)}\b", listed.output, re.M), f"{name} is not a command of evalyard"
    assert {"run", "runs export", "compare", "calibrate", "models install", "checklist generate"} <= set(paths)
    group = ref.documented_cli()
    import click

    for path in paths:
        command = group
        for word in path.split():
            command = command.get_command(click.Context(command), word)
        assert (command.help or command.short_help or "").strip(), f"`evalyard {path}` has no help text"
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden and param.name != "help":
                assert param.help, f"`evalyard {path}` option {param.opts[0]} has no help text"


def test_every_hook_has_its_contract(ref):
    from evalyard import hookspecs

    specs = {name for name, f in vars(hookspecs).items() if callable(f) and hasattr(f, "evalyard_spec")}
    documented = {hook["name"]: hook for hook in ref.hooks()}
    assert set(documented) == specs and len(specs) >= 10
    rendered = ref.hooks_markdown()
    for name, hook in documented.items():
        assert f"## `{name}`" in rendered
        assert f"`{name}({', '.join(hook['arguments'])})`" in rendered
        assert len(hook["doc"]) > 40, f"hook {name} has no contract in its docstring"
        signature = inspect.signature(getattr(hookspecs, name))
        assert "app" in signature.parameters, f"hook {name} does not take the application"


def test_every_installed_scorer_has_its_entry(ref):
    from evalyard import Application, Settings

    registry = Application(Settings(entry_points=True)).registry
    names = {entry.qualified for entry in registry.scorers}
    rendered = ref.scorers_markdown()
    assert names and {s["qualified"] for s in ref.scorers()} == names
    for name in names:
        assert f"## `{name}`" in rendered, name
    for scorer in ref.scorers():
        assert scorer["description"].strip(), f"{scorer['qualified']} has no description"
        for item in scorer["config"]:
            assert item.get("help"), f"{scorer['qualified']}: config key {item['name']} has no help"
    # the built-in plugins' families are all there
    assert {"lexicon/exact_match", "embedding/bertscore", "sandbox/python_unit_testing", "trust/trust_score",
            "checklist/checklist", "criteria/correctness"} <= names


def test_every_installed_generator_has_its_entry(ref):
    from evalyard import Application, Settings

    registry = Application(Settings(entry_points=True)).registry
    names = {entry.qualified for entry in registry.generators}
    rendered = ref.generators_markdown()
    assert {"evalyard/model", "agent/conversation", "agent/simulated_user", "checklist/tick"} <= names
    for generator in ref.generators():
        assert f"## `{generator['qualified']}`" in rendered
        assert generator["description"].strip(), f"{generator['qualified']} has no description"
        for item in generator["config"]:
            assert item.get("help"), f"{generator['qualified']}: config key {item['name']} has no help"
    assert {g["qualified"] for g in ref.generators()} == names


def test_every_setting_and_variable_has_its_entry(ref):
    import dataclasses

    from evalyard import Settings

    core = {setting["name"]: setting for setting in ref.core_settings()}
    assert set(core) == {field.name for field in dataclasses.fields(Settings)}
    for name, setting in core.items():
        assert setting["doc"], f"Settings.{name} is not described in the Settings docstring"
    # every variable Settings.from_env reads is named in the reference
    source = inspect.getsource(Settings.from_env)
    variables = set(re.findall(r'"((?:EVALYARD|OTEL)_[A-Z_]+)"', source))
    rendered = ref.settings_markdown()
    assert variables and all(f"`{variable}`" in rendered for variable in variables), variables
    plugin = ref.plugin_settings()
    assert plugin, "no plugin declares a setting: the plugins are not installed?"
    for setting in plugin:
        assert f"`{setting['name']}`" in rendered
        assert setting["help"], f"plugin setting {setting['name']} has no help"


def test_the_data_formats_are_documented(ref):
    from evalyard import Case
    from evalyard.store.reading import EXPORT_COLUMNS

    import dataclasses

    fields = ref.case_fields_markdown()
    assert all(f"`{field.name}`" in fields for field in dataclasses.fields(Case))
    columns = ref.export_columns_markdown()
    assert all(f"`{column}`" in columns for column in EXPORT_COLUMNS)
    from evalyard.store.trials import TRIAL_COLUMNS

    assert all(f"`{column}`" in columns for column in TRIAL_COLUMNS)  # runs export --trials
    formats = ref.formats_markdown()
    assert all(f"`{name}`" in formats for name in ("jsonl", "csv", "json", "promptfoo", "inspect", "trust-eval"))
    outputs = ref.outputs_markdown()
    registry = ref.application().registry
    assert all(f"`{registry.outputs.display_name(entry)}`" in outputs for entry in registry.outputs)
    assert "| `markdown` | `evalyard.builtins.outputs` | `evalyard-{run_id}.md`, or standard output |" in outputs


def test_every_plugin_readme_is_included_in_the_site():
    from testutil import ROOT

    plugins = sorted(p.parent.name for p in (ROOT / "plugins").glob("*/README.md"))
    assert plugins
    index = page("plugins/index.md")
    for name in plugins:
        assert f"{{include}} ../../plugins/{name}/README.md" in page(f"plugins/{name}.md")
        assert f"\n{name}\n" in index, f"plugins/{name} is not in the plugins toctree"
