"""A plugin declares hooks of its own (``register_hookspecs``, as pytest's ``pytest_addhooks``);
other plugins implement them and the declaring plugin reads what they registered through
``runtime.registered``."""

from __future__ import annotations

import pytest

import evalyard
from evalyard import PluginError, Settings, hookimpl, hookspec


class GreeterSpecs:
    @hookspec
    def register_greetings(self, register):
        """``register(name, text)``."""


class Declarer:
    @hookimpl
    def register_hookspecs(self, register):
        register(GreeterSpecs)

    @hookimpl
    def register_greetings(self, register):
        register("hello", "Hello!")


class Other:
    @hookimpl
    def register_greetings(self, register):
        register("hi", "Hi!")


def greetings(app):
    return app.runtime({}, concurrency=1).registered("register_greetings", "greeting")


def test_a_declared_hook_collects_from_every_plugin_whatever_the_order():
    app = evalyard.Application(Settings.from_env(), plugins=[("other", Other()), ("declarer", Declarer())])
    assert greetings(app) == {"hello": "Hello!", "hi": "Hi!"}


def test_a_plugin_added_later_declares_its_hooks_as_it_is_added(app):
    app.register_plugin(Declarer(), name="declarer")
    app.register_plugin(Other(), name="other")
    assert greetings(app) == {"hello": "Hello!", "hi": "Hi!"}
    app.unregister_plugin("other")
    assert greetings(app) == {"hello": "Hello!"}


def test_implementing_a_hook_nobody_declared_still_fails_loudly(app):
    with pytest.raises(PluginError, match="unknown hook"):
        app.register_plugin(Other(), name="other")
    assert "other" not in {i.name for i in app.host.infos()}


def test_one_name_belongs_to_one_plugin(app):
    class Again(Other):
        @hookimpl
        def register_greetings(self, register):
            register("hello", "Hello again")

    app.register_plugin(Declarer(), name="declarer")
    app.register_plugin(Again(), name="again")
    with pytest.raises(PluginError, match="'again' registered greeting 'hello', which plugin 'declarer'"):
        greetings(app)


def test_a_namespace_without_hook_specifications_is_refused(app):
    class Empty:
        @hookimpl
        def register_hookspecs(self, register):
            register(object)

    with pytest.raises(PluginError, match="mark them with @evalyard.hookspec"):
        app.register_plugin(Empty(), name="empty")
    assert "empty" not in {i.name for i in app.host.infos()}


def test_asking_for_a_hook_nobody_declared_names_it(app):
    with pytest.raises(PluginError, match="no loaded plugin declares the hook 'register_greetings'"):
        greetings(app)


def test_an_optional_implementation_loads_without_the_declaring_plugin(app):
    class Optional:
        @hookimpl(optionalhook=True)
        def register_greetings(self, register):
            register("hey", "Hey!")

    app.register_plugin(Optional(), name="optional")
    app.register_plugin(Declarer(), name="declarer")
    assert greetings(app) == {"hey": "Hey!", "hello": "Hello!"}
