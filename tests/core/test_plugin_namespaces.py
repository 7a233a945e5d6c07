"""A plugin may register under a second namespace of its own (``register(cls, namespace=...)``):
the namespace then belongs to it, blocks like a plugin, and ``evalyard plugins`` shows it. Real
plugins registered in-process (or from a file, for the command line), never mocks."""

from __future__ import annotations

import dataclasses
import json
import subprocess

import pytest

import evalyard
from evalyard import Application, PluginError, Score, Scorer, Settings, hookimpl


class Own(Scorer):
    name = "own"

    def score(self, case):
        return Score(value=1.0)


class Extra(Scorer):
    name = "extra"

    def score(self, case):
        return Score(value=0.5)


class Maker:
    """Registers one scorer under its own namespace, one under ``aspects``, and a template and a
    data format under ``aspects`` as well."""

    @hookimpl
    def register_loaders(self, register):
        register("lines", lambda path, field_map: [], (".lines",), namespace="aspects")

    @hookimpl
    def register_scorers(self, register):
        register(Own)
        register(Extra, namespace="aspects")

    @hookimpl
    def register_prompt_templates(self, register):
        register("question", QUESTION, namespace="aspects")


QUESTION = """---
answer: binary
fields: [candidate]
---
Is it so? {{ candidate }}
"""


def claiming(namespace):
    class Claimer:
        @hookimpl
        def register_scorers(self, register):
            register(Extra, namespace=namespace)
    return Claimer()


def settings(**changes):
    return dataclasses.replace(Settings.from_env(), entry_points=False, **changes)


def qualified(app):
    return {e.qualified: e.plugin for e in app.registry.scorers if e.name in ("own", "extra")}


def test_a_plugin_registers_under_a_second_namespace(tmp_path):
    app = Application(settings(), plugins=[("maker", Maker())])
    assert qualified(app) == {"maker/own": "maker", "aspects/extra": "maker"}
    assert app.registry.namespaces("maker") == ["maker", "aspects"]
    assert "aspects/question" in {e.qualified for e in app.registry.prompt_templates}
    assert app.registry.loader_for("x.lines").qualified == "aspects/lines"
    data = tmp_path / "c.jsonl"
    data.write_text('{"id": "1", "candidate": "x"}\n')
    result = evalyard.evaluate(str(data), ["aspects/extra", "own"], app=app)
    assert result.summary["aspects/extra"]["mean"] == 0.5 and result.summary["own"]["mean"] == 1.0


def test_a_namespace_belongs_to_one_plugin():
    # another loaded plugin's own namespace, whichever loads first
    for plugins in ([("maker", Maker()), ("thief", claiming("maker"))],
                    [("thief", claiming("maker")), ("maker", Maker())]):
        with pytest.raises(PluginError, match="plugin 'thief' registers under the namespace 'maker', which belongs "
                                              "to plugin 'maker'"):
            Application(settings(), plugins=plugins).registry
    # an extra namespace another plugin claimed first
    with pytest.raises(PluginError, match="plugin 'second' registers under the namespace 'aspects', which belongs "
                                          "to plugin 'maker'"):
        Application(settings(), plugins=[("maker", Maker()), ("second", claiming("aspects"))]).registry
    # the core's namespace is the built-in plugins'
    with pytest.raises(PluginError, match="'thief' .* namespace 'evalyard', which belongs to plugin 'evalyard.builtins"):
        Application(settings(), plugins=[("thief", claiming("evalyard"))]).registry
    with pytest.raises(PluginError, match="reserved for the scorers of the user's prompt directories"):
        Application(settings(), plugins=[("thief", claiming("prompts"))]).registry
    with pytest.raises(PluginError, match="non-empty name without '/'"):
        Application(settings(), plugins=[("odd", claiming("a/b"))]).registry
    # naming its own namespace is no claim
    app = Application(settings(), plugins=[("mine", claiming("mine"))])
    assert qualified(app) == {"mine/extra": "mine"} and app.registry.namespaces("mine") == ["mine"]


def test_blocking_a_namespace_drops_it_and_blocking_the_plugin_drops_both():
    app = Application(settings(block_plugins=frozenset({"aspects"})), plugins=[("maker", Maker())])
    assert qualified(app) == {"maker/own": "maker"}
    assert app.registry.namespaces("maker") == ["maker"]
    assert "aspects/question" not in {e.qualified for e in app.registry.prompt_templates}
    assert "aspects/lines" not in app.registry.loaders
    app = Application(settings(block_plugins=frozenset({"maker"})), plugins=[("maker", Maker())])
    assert qualified(app) == {}


def test_the_allow_list_does_not_apply_to_an_in_process_plugins_namespaces():
    """``EVALYARD_LOAD_PLUGINS`` picks installed plugins and their namespaces; an in-process plugin
    passes it, with everything it registers."""
    app = Application(settings(load_plugins=frozenset()), plugins=[("maker", Maker())])
    assert qualified(app) == {"maker/own": "maker", "aspects/extra": "maker"}


MAKER_FILE = '''
from evalyard import Score, Scorer, hookimpl

class Extra(Scorer):
    name = "extra"
    def score(self, case):
        return Score(value=0.5)

@hookimpl
def register_scorers(register):
    register(Extra, namespace="aspects")
'''


def test_plugins_json_lists_each_plugins_namespaces(cli_env, evalyard_exe, tmp_path):
    (tmp_path / "maker.py").write_text(MAKER_FILE)
    env = dict(cli_env, EVALYARD_EXTRA_PLUGINS=str(tmp_path / "maker.py"))

    def listed(**more):
        out = subprocess.run([evalyard_exe, "plugins", "--json"], env=dict(env, **more), capture_output=True,
                             text=True)
        assert out.returncode == 0, out.stderr
        return {p["name"]: p for p in json.loads(out.stdout)}

    maker = listed()[str(tmp_path / "maker.py")]
    assert maker["namespace"] == "maker" and maker["namespaces"] == ["maker", "aspects"]
    blocked = listed(EVALYARD_BLOCK_PLUGINS="aspects")
    assert blocked[str(tmp_path / "maker.py")]["namespaces"] == ["maker"]
    assert "aspects" not in blocked  # a blocked name is not listed as a plugin
    text = subprocess.run([evalyard_exe, "plugins"], env=env, capture_output=True, text=True, check=True).stdout
    assert "maker, aspects" in text
