"""Plugin loading and registration rules, tested with real plugins registered and unregistered."""

from __future__ import annotations

import json
import subprocess
import types

import pytest

import evalyard
from evalyard import Case, InputError, PluginError, Score, Scorer, UnknownNameError, hookimpl


def make_plugin(*scorer_classes, hook_name="register_scorers"):
    module = types.ModuleType("fake_plugin")

    def register_scorers(register):
        for cls in scorer_classes:
            register(cls)

    register_scorers.__name__ = hook_name
    setattr(module, hook_name, hookimpl(register_scorers))
    return module


class Echo(Scorer):
    name = "contains"  # clashes with the built-in on purpose

    def score(self, case):
        return Score(value=1.0)


def test_two_plugins_may_register_the_same_bare_name(app, tmp_path):
    """A clash of bare names breaks nothing until the ambiguous bare name is used."""
    app.register_plugin(make_plugin(Echo), name="echo_plugin")
    registry = app.registry
    assert {e.qualified for e in registry.scorers if e.name == "contains"} == {"evalyard/contains",
                                                                               "echo_plugin/contains"}
    with pytest.raises(UnknownNameError) as err:
        registry.scorer("contains")
    assert "evalyard/contains" in str(err.value) and "echo_plugin/contains" in str(err.value)
    assert registry.scorer("echo_plugin/contains") is Echo
    assert registry.scorer("json_valid").name == "json_valid"  # unaffected names still work bare

    data = tmp_path / "c.jsonl"
    data.write_text('{"id": "1", "candidate": "x", "reference": "x"}\n')
    result = evalyard.evaluate(str(data), ["evalyard/contains", "echo_plugin/contains", "json_valid"], app=app)
    assert result.summary["evalyard/contains"]["mean"] == 1.0 and result.summary["echo_plugin/contains"]["mean"] == 1.0
    with pytest.raises(InputError, match="ambiguous"):
        evalyard.evaluate(str(data), ["contains"], app=app)


def test_same_plugin_registering_a_name_twice_fails(app):
    app.register_plugin(make_plugin(Echo, Echo), name="twice")
    with pytest.raises(PluginError, match="'twice' registered scorer 'contains' twice"):
        app.registry


def test_register_checks_types(app):
    app.register_plugin(make_plugin(dict), name="bad_types")
    with pytest.raises(PluginError, match="expected a subclass of evalyard.Scorer"):
        app.registry


def test_unknown_required_field_rejected(app):
    class Odd(Scorer):
        name = "odd"
        requires = ("answer",)

    app.register_plugin(make_plugin(Odd), name="odd_plugin")
    with pytest.raises(PluginError, match="unknown case field 'answer'"):
        app.registry


def test_a_config_option_may_not_shadow_a_platform_key(app):
    from dataclasses import dataclass

    class Shadow(Scorer):
        name = "shadow"

        @dataclass
        class Config:
            threshold: float = 0.5

    app.register_plugin(make_plugin(Shadow), name="shadow_plugin")
    with pytest.raises(PluginError, match="'threshold', which is a platform key"):
        app.registry


def test_a_hook_that_raises_is_a_plugin_error_naming_the_plugin(app):
    module = types.ModuleType("raising")

    @hookimpl
    def register_scorers(register):
        raise RuntimeError("boom")

    module.register_scorers = register_scorers
    app.register_plugin(module, name="raising_plugin")
    with pytest.raises(PluginError, match="plugin 'raising_plugin' failed in register_scorers: RuntimeError: boom"):
        app.registry


def test_misspelt_hook_fails_loudly_and_is_not_kept(app):
    with pytest.raises(PluginError, match="register_scorer"):
        app.register_plugin(make_plugin(Echo, hook_name="register_scorer"), name="typo_plugin")
    assert "typo_plugin" not in {i.name for i in app.host.infos()}


def test_applications_do_not_share_plugins(app):
    from evalyard import Application

    app.register_plugin(make_plugin(Echo), name="only_here")
    assert "only_here/contains" in app.registry.scorers
    assert "only_here/contains" not in Application().registry.scorers


def test_a_loader_written_to_the_docs_returns_a_list_of_cases(app, tmp_path):
    module = types.ModuleType("lines_loader")

    def load_lines(path, field_map):
        return [Case(id=str(i), candidate=line) for i, line in enumerate(open(path).read().splitlines())]

    @hookimpl
    def register_loaders(register):
        register(".lines", load_lines)

    module.register_loaders = register_loaders
    app.register_plugin(module, name="lines")
    path = tmp_path / "c.lines"
    path.write_text("{}\nnot json\n")
    result = evalyard.evaluate(str(path), ["json_valid"], app=app)
    assert result.summary["json_valid"]["mean"] == 0.5


def test_tracing_shows_every_registration_hook(cli_env, evalyard_exe):
    out = subprocess.run([evalyard_exe, "scorers"], env=dict(cli_env, EVALYARD_TRACE_PLUGINS="1"),
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for hook in ("register_scorers", "register_loaders", "register_executors"):
        assert hook in out.stderr, hook


def _scorer_names(env):
    out = subprocess.run(["evalyard", "scorers", "--json"], env=env, capture_output=True, text=True, check=True)
    return {s["name"]: s["plugin"] for s in json.loads(out.stdout)}


def test_block_and_allow_lists(cli_env, evalyard_exe, tmp_path):
    env = dict(cli_env, PATH=str(__import__("pathlib").Path(evalyard_exe).parent) + ":" + cli_env["PATH"])
    names = _scorer_names(env)
    assert names["scripted"] == "scripted_scorers" and names["contains"] == "evalyard.builtins.scorers"
    # EVALYARD_LOAD_PLUGINS="" in cli_env: no installed entry-point plugin is loaded
    blocked = _scorer_names(dict(env, EVALYARD_BLOCK_PLUGINS="evalyard.builtins.scorers,scripted_scorers"))
    assert "contains" not in blocked and "scripted" not in blocked
    only_builtins = _scorer_names(dict(env, EVALYARD_LOAD_PLUGINS=""))
    assert all(plugin.startswith("evalyard.builtins") or plugin == "scripted_scorers"
               for plugin in only_builtins.values())


def test_extra_plugin_from_a_python_file(cli_env, evalyard_exe, tmp_path):
    source = tmp_path / "my_scorers.py"
    source.write_text(
        "from evalyard import hookimpl, Scorer, Score\n"
        "class Shouty(Scorer):\n"
        "    name = 'shouty'\n"
        "    def score(self, case):\n"
        "        return Score(value=float(case.candidate.isupper()))\n"
        "@hookimpl\n"
        "def register_scorers(register):\n"
        "    register(Shouty)\n"
    )
    data = tmp_path / "c.jsonl"
    data.write_text('{"id": "1", "candidate": "HI"}\n{"id": "2", "candidate": "hi"}\n')
    env = dict(cli_env, EVALYARD_EXTRA_PLUGINS=str(source))
    out = subprocess.run([evalyard_exe, "run", str(data), "-s", "shouty", "--json"], env=env, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["scorers"]["shouty"]["mean"] == 0.5
    broken = subprocess.run([evalyard_exe, "scorers"], env=dict(env, EVALYARD_EXTRA_PLUGINS=str(tmp_path / "no.py")),
                            capture_output=True, text=True)
    assert broken.returncode == 2 and "cannot load" in broken.stderr
