"""Model providers come from plugins through ``register_model_providers``: a run's model layer
routes to its application's providers only, so the allow/block lists, tracing and a test's own
plugins apply to them as to every other hook. Calls go through the real litellm."""

from __future__ import annotations

import pytest

import evalyard
from evalyard import PluginError, Settings, hookimpl
from evalyard.models import ModelCallError
from testutil import provider_plugin

MESSAGES = [{"role": "user", "content": "hello there"}]


class Shout:
    """A litellm custom handler: answers with the prompt in capitals."""

    def capabilities(self, model):
        return {"supports_schema": False, "concurrency": 3}

    async def acompletion(self, model, messages, *args, **kwargs):
        import litellm

        text = messages[-1]["content"].upper()
        return litellm.ModelResponse(choices=[{"index": 0, "finish_reason": "stop",
                                               "message": {"role": "assistant", "content": text}}],
                                     usage={"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4})


class ShoutPlugin:
    @hookimpl
    def register_model_providers(self, register):
        register("shout", Shout())


def complete(app, model):
    runtime = app.runtime({}, concurrency=2)
    try:
        return runtime.models.complete_sync(model, MESSAGES).text
    finally:
        runtime.close()


def test_a_plugin_provider_answers_through_litellm_in_its_application_only(app):
    app.register_plugin(ShoutPlugin(), name="shout_plugin")
    assert complete(app, "shout/any") == "HELLO THERE"
    runtime = app.runtime({}, concurrency=2)
    assert not runtime.models.supports_schema("shout/any") and runtime.models.limit_for("shout/any").slots.size == 3
    runtime.close()
    # Another application without the plugin does not reach the provider litellm now routes.
    with pytest.raises(ModelCallError, match="no loaded plugin provides shout/ models"):
        complete(evalyard.Application(), "shout/any")
    app.unregister_plugin("shout_plugin")
    with pytest.raises(ModelCallError, match="no loaded plugin provides shout/"):
        complete(app, "shout/any")


def test_the_scripted_model_is_a_builtin_plugin_that_can_be_blocked(app, rules):
    model = rules([{"content": "ANSWER: yes"}])
    assert "scripted" in app.model_providers and complete(app, model) == "ANSWER: yes"
    blocked = evalyard.Application(Settings.from_env(block_plugins=frozenset({"evalyard.testing.scripted"})))
    assert "scripted" not in blocked.model_providers
    with pytest.raises(ModelCallError, match="no loaded plugin provides scripted/"):
        complete(blocked, model)


def test_a_blocked_provider_is_a_recorded_error_in_a_run(app, rules):
    import tiny_judge_plugin

    model = rules([{"content": "Kind.\nANSWER: yes"}])
    blocked = evalyard.Application(Settings.from_env(block_plugins=frozenset({"evalyard.testing.scripted"})))
    blocked.register_plugin(tiny_judge_plugin, name="tiny")
    complete(app, model)  # litellm routes scripted/ for this process now
    run = evalyard.evaluate([{"id": "a", "input": "Hi?", "candidate": "Hello!"}], ["polite"], app=blocked,
                            judge_model=model)
    [result] = run.results
    assert result["value"] is None and "no loaded plugin provides scripted/" in result["error"]


def test_tracing_shows_the_providers_hook(capsys):
    app = evalyard.Application(Settings.from_env(trace_plugins=True))
    app.register_plugin(ShoutPlugin(), name="shout_plugin")
    assert set(app.model_providers) >= {"scripted", "shout"}
    assert "register_model_providers" in capsys.readouterr().err


def test_one_prefix_belongs_to_one_plugin(app):
    class Again(ShoutPlugin):
        pass

    app.register_plugin(ShoutPlugin(), name="first")
    app.register_plugin(Again(), name="second")
    with pytest.raises(PluginError, match="'second' registered model provider 'shout', which plugin 'first'"):
        app.model_providers


@pytest.mark.parametrize("name, handler, message", [
    ("with/slash", Shout(), "without '/'"),
    ("quiet", object(), "neither completion"),
])
def test_a_provider_is_checked_when_registered(app, name, handler, message):
    app.register_plugin(provider_plugin(name, handler), name="bad")
    with pytest.raises(PluginError, match=message):
        app.model_providers


def test_add_model_provider_reaches_its_own_application_only(app):
    app.add_model_provider("shout-added", Shout())
    assert complete(app, "shout-added/x") == "HELLO THERE"
    with pytest.raises(ModelCallError, match="no loaded plugin provides shout-added/"):
        complete(evalyard.Application(Settings()), "shout-added/x")
    with pytest.raises(PluginError, match="neither completion"):
        app.add_model_provider("quiet", object())


class Whisper(Shout):
    async def acompletion(self, model, messages, *args, **kwargs):
        response = await super().acompletion(model, messages, *args, **kwargs)
        response.choices[0].message.content = response.choices[0].message.content.lower()
        return response


class WrapShout:
    """Takes over ``shout/`` (as evalyard-ray takes over ``local/``), seeing the handler it replaces."""

    seen: list = []

    @hookimpl
    def wrap_model_provider(self, name, handler, app):
        if name != "shout":
            return None
        self.seen.append(type(handler).__name__)
        return Whisper()


def test_a_plugin_takes_over_another_plugins_provider_through_the_hook_only_when_it_is_loaded(app):
    app.register_plugin(ShoutPlugin(), name="shout_plugin")
    app.register_plugin(WrapShout(), name="wrap_shout")
    assert complete(app, "shout/any") == "hello there" and WrapShout.seen == ["Shout"]
    # the provider's plugin blocked: nothing to take over, and the wrapping plugin does nothing
    blocked = evalyard.Application(Settings(block_plugins=frozenset({"shout_plugin"})),
                                   plugins=[("shout_plugin", ShoutPlugin()), ("wrap_shout", WrapShout())])
    assert "shout" not in blocked.model_providers


def stored_runs(db):
    import sqlite3

    if not db.exists():
        return []
    with sqlite3.connect(db) as con:
        try:
            return con.execute("select id from runs").fetchall()
        except sqlite3.OperationalError:  # no tables yet
            return []


class Gated(Shout):
    """Serves only the models it has: its ``check`` refuses the others before a run is stored."""

    def __init__(self):
        self.checked = []

    def check(self, model):
        self.checked.append(model)
        if model != "gated/have":
            raise FileNotFoundError(f"{model}: not installed here (install it with `gated get`)")


def test_a_providers_check_refuses_a_judge_model_before_the_run_is_stored(app, isolated_home):
    import tiny_judge_plugin

    gated = Gated()
    app.register_plugin(provider_plugin("gated", gated), name="gated_plugin")
    app.register_plugin(tiny_judge_plugin, name="tiny")
    cases = [{"id": "a", "input": "Hi?", "candidate": "Hello!"}, {"id": "b", "input": "Yo?", "candidate": "Hey."}]
    with pytest.raises(evalyard.InputError, match=r"^gated/missing: not installed here \(install it with `gated get`\)$"):
        evalyard.evaluate(cases, ["polite"], app=app, judge_model="gated/missing")
    assert stored_runs(isolated_home / "evalyard.db") == []
    run = evalyard.evaluate(cases, ["polite"], app=app, judge_model="gated/have")
    assert run.status == "completed" and len(run.results) == 2
    assert gated.checked == ["gated/missing", "gated/have"]  # once per run and model, before any call
