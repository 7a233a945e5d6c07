"""evalyard-ray takes over evalyard-local's ``local/`` provider through the declared
``wrap_model_provider`` hook, per application and only where its setting is on: nothing is
installed when the plugin is imported, a blocked or absent evalyard-local leaves nothing to take
over, and nothing connects to Ray until a call."""

from __future__ import annotations

import pytest
from testutil import probe

pytest.importorskip("evalyard_ray")
pytest.importorskip("evalyard_local")

import evalyard_local.plugin  # noqa: E402
import evalyard_ray.plugin  # noqa: E402
from evalyard import Application, Settings  # noqa: E402
from evalyard_local import LocalProvider  # noqa: E402


def app(*, local: bool = True, **settings) -> Application:
    plugins = [("local", evalyard_local.plugin)] if local else []
    return Application(Settings(entry_points=False, **settings), plugins=[*plugins, ("ray", evalyard_ray.plugin)])


def test_only_an_application_with_the_setting_on_serves_local_from_the_cluster(tmp_path):
    plain = app(models_dir=tmp_path)
    on = app(models_dir=tmp_path, env={"EVALYARD_RAY_LOCAL_MODELS": "1", "EVALYARD_LOCAL_PARALLEL": "2"})
    assert type(plain.model_providers["local"]) is LocalProvider
    served = on.model_providers["local"]
    assert type(served).__name__ == "ClusterLocalProvider" and isinstance(served, LocalProvider)
    # it keeps the application's own local settings, and its pool outlives a registry built again
    assert served.models_dir == tmp_path and served.load["parallel"] == 2
    on.register_plugin(object(), name="nothing")
    assert on.model_providers["local"].engine is served.engine


def test_a_blocked_or_absent_evalyard_local_leaves_nothing_to_take_over():
    blocked = app(block_plugins=frozenset({"local"}), plugin_settings={"ray.local_models": True})
    absent = app(local=False, plugin_settings={"ray.local_models": True})
    assert "local" not in blocked.model_providers and "local" not in absent.model_providers


def test_importing_the_plugin_installs_nothing():
    loaded = probe("import os; os.environ['EVALYARD_RAY_LOCAL_MODELS'] = '1'\nimport sys, evalyard_ray.plugin\n"
                   "print(sorted(m for m in ('evalyard_local', 'evalyard_ray.models', 'ray', 'litellm') if m in sys.modules))")
    assert loaded == "[]"
