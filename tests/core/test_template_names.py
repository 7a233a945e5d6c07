"""One naming rule for plugin prompt templates: the registry names each `<plugin namespace>/<bare
name>`, no plugin prefixes names by hand, and the names templates had before (`trust_entailment`,
`checklist_gen_tick`) still resolve, for lookups and for a user's overriding file."""

from __future__ import annotations

import types

import pytest
from click.testing import CliRunner

from evalyard import PluginError, hookimpl
from evalyard.app import plugin_templates
from evalyard.cli import cli
from evalyard.runtime import Runtime

FORMER = {"trust_entailment": "trust/entailment", "checklist_gen_tick": "checklist/gen_tick",
          "checklist_score_item": "checklist/score_item"}

OVERRIDE = """---
answer: binary
fields: [candidate, context]
---
My own entailment check: {{ candidate }} against {{ context }}
"""


def library(app, *dirs):
    return Runtime(prompt_dirs=dirs, plugin_templates=plugin_templates(app.registry)).prompts


def invoke(app, *args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj=app, catch_exceptions=False)


def template_plugin(register_call):
    module = types.ModuleType("named_templates")

    @hookimpl
    def register_prompt_templates(register):
        register_call(register)

    module.register_prompt_templates = register_prompt_templates
    return module


def test_every_plugin_template_is_listed_as_namespace_slash_bare_name(installed_plugins, app):
    entries = list(app.registry.prompt_templates)
    assert {"judge", "checklist", "trust"} <= {e.namespace for e in entries}
    for entry in entries:
        assert "/" not in entry.name, entry.qualified  # no hand-made prefix such as judge/judge/...
    listed = {t.name: t for t in library(app).list()}
    plugin_listed = {name for name, t in listed.items() if t.source.startswith("plugin ")}
    assert plugin_listed == {e.qualified for e in entries}
    for name in plugin_listed:
        namespace, bare = name.split("/")
        assert listed[name].source == f"plugin {namespace}" and not bare.startswith(f"{namespace}_"), name
    assert {"judge/criterion", "checklist/gen_tick", "trust/entailment"} <= plugin_listed
    shown = invoke(app, "prompts", "list")
    assert shown.exit_code == 0, shown.output
    names = {line.split()[0] for line in shown.output.splitlines()[2:] if line.strip()}
    assert {"checklist/gen_tick", "trust/entailment", "judge/summary_quality"} <= names
    assert not {"checklist_gen_tick", "trust_entailment", "judge/judge/summary_quality"} & names


def test_former_names_resolve_to_the_renamed_templates(installed_plugins, app):
    prompts = library(app)
    for old, new in FORMER.items():
        found = prompts.get(old)
        assert found.name == new and old in found.aliases
        assert found.text == prompts.get(new).text
        # Fingerprints record the original name, so existing calibrations and comparisons still match.
        assert found.recorded_name == old
    shown = invoke(app, "prompts", "show", "checklist_gen_tick")
    assert shown.exit_code == 0, shown.output
    assert shown.output.startswith("# checklist/gen_tick from plugin checklist")


def test_a_user_file_under_a_former_name_still_overrides_the_plugin_template(installed_plugins, app, tmp_path):
    (tmp_path / "trust_entailment.jinja").write_text(OVERRIDE)
    prompts = library(app, tmp_path)
    for name in ("trust/entailment", "trust_entailment"):
        found = prompts.get(name)
        assert found.path == str(tmp_path / "trust_entailment.jinja")
        assert found.overrides == ["plugin trust"]
    assert "trust_entailment" not in prompts.names() and "trust/entailment" in prompts.names()


def test_a_plugin_cannot_register_a_prefixed_template_name(app):
    app.register_plugin(template_plugin(lambda register: register("judge/criterion", OVERRIDE)), name="prefixer")
    with pytest.raises(PluginError, match="must be bare"):
        app.registry


def test_an_alias_must_name_a_template_the_plugin_registered(app):
    app.register_plugin(template_plugin(lambda register: register("mine", OVERRIDE, aliases={"old_mine": "other"})),
                        name="aliaser")
    with pytest.raises(PluginError, match="alias 'old_mine'"):
        app.registry


def test_a_plugin_alias_resolves_in_the_library(app):
    app.register_plugin(template_plugin(lambda register: register("mine", OVERRIDE, aliases={"aliaser_mine": "mine"})),
                        name="aliaser")
    prompts = library(app)
    assert prompts.get("aliaser_mine").name == "aliaser/mine"
    assert "aliaser/mine" in prompts.names()
