"""One naming rule for plugin prompt templates: the registry names each `<plugin namespace>/<bare
name>`, no plugin prefixes names by hand; the names templates had before 0.2 (`trust_entailment`,
`checklist_gen_tick`) are gone, and a user's file overrides a plugin template under its own name."""

from __future__ import annotations

import types

import pytest
from click.testing import CliRunner

from evalyard import PluginError, hookimpl
from evalyard.app import plugin_templates
from evalyard.cli import cli
from evalyard.runtime import Runtime

FORMER = {"trust_entailment": "trust/entailment", "checklist_gen_tick": "checklist/gen_tick",
          "checklist_score_item": "checklist/score_item"}  # 0.1's names -> the names since 0.2

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


def test_former_names_are_gone_and_fingerprints_record_the_current_name(installed_plugins, app):
    prompts = library(app)
    for old, new in FORMER.items():
        with pytest.raises(Exception, match=f"no prompt template named '{old}'"):
            prompts.get(old)
        assert prompts.get(new).name == new
    shown = invoke(app, "prompts", "show", "checklist_gen_tick")
    assert shown.exit_code == 2 and "no prompt template named 'checklist_gen_tick'" in shown.output


def test_a_user_file_overrides_the_plugin_template_under_its_name(installed_plugins, app, tmp_path):
    (tmp_path / "trust").mkdir()
    (tmp_path / "trust" / "entailment.jinja").write_text(OVERRIDE)
    (tmp_path / "trust_entailment.jinja").write_text(OVERRIDE)  # a former name: its own template now
    prompts = library(app, tmp_path)
    found = prompts.get("trust/entailment")
    assert found.path == str(tmp_path / "trust" / "entailment.jinja")
    assert found.overrides == ["plugin trust"]
    assert prompts.get("trust_entailment").overrides == []


def test_a_plugin_cannot_register_a_prefixed_template_name(app):
    app.register_plugin(template_plugin(lambda register: register("judge/criterion", OVERRIDE)), name="prefixer")
    with pytest.raises(PluginError, match="must be bare"):
        app.registry


def test_register_takes_no_aliases_any_more(app):
    app.register_plugin(template_plugin(lambda register: register("mine", OVERRIDE, aliases={"old_mine": "mine"})),
                        name="aliaser")
    with pytest.raises(PluginError, match="unexpected keyword argument .aliases."):
        app.registry
