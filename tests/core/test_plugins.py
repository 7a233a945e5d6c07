"""Plugin loading and registration rules, tested with real plugins registered and unregistered."""

from __future__ import annotations

import json
import subprocess
import types

import pytest

from evalyard import PluginError, Score, Scorer, hookimpl, plugins
from evalyard.registry import get_registry


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


@pytest.fixture
def cleanup():
    names = []
    yield names
    for name in names:
        plugins.unregister_plugin(name)


def test_duplicate_scorer_name_names_both_plugins(cleanup):
    plugins.register_plugin(make_plugin(Echo), name="clashing_plugin")
    cleanup.append("clashing_plugin")
    with pytest.raises(PluginError) as err:
        get_registry()
    message = str(err.value)
    assert "'contains'" in message and "'evalyard.builtins.scorers'" in message and "'clashing_plugin'" in message


def test_register_checks_types(cleanup):
    plugins.register_plugin(make_plugin(dict), name="bad_types")
    cleanup.append("bad_types")
    with pytest.raises(PluginError, match="expected a subclass of evalyard.Scorer"):
        get_registry()


def test_unknown_required_field_rejected(cleanup):
    class Odd(Scorer):
        name = "odd"
        requires = ("answer",)

    plugins.register_plugin(make_plugin(Odd), name="odd_plugin")
    cleanup.append("odd_plugin")
    with pytest.raises(PluginError, match="unknown case field 'answer'"):
        get_registry()


def test_misspelt_hook_fails_loudly():
    import pluggy

    with pytest.raises(pluggy.PluginValidationError, match="register_scorer"):
        plugins.register_plugin(make_plugin(Echo, hook_name="register_scorer"), name="typo_plugin")
    plugins.unregister_plugin("typo_plugin")


def _scorer_names(env):
    out = subprocess.run(["evalyard", "scorers", "--json"], env=env, capture_output=True, text=True, check=True)
    return {s["name"]: s["plugin"] for s in json.loads(out.stdout)}


def test_block_and_allow_lists(cli_env, evalyard_exe, tmp_path):
    env = dict(cli_env, PATH=str(__import__("pathlib").Path(evalyard_exe).parent) + ":" + cli_env["PATH"])
    names = _scorer_names(env)
    assert names["scripted"] == "scripted_scorers" and names["contains"] == "evalyard.builtins.scorers"
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
