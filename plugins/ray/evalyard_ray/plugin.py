"""The plugin's hooks: its settings, the ``ray`` executor (Ray is imported when a run first uses
it) and, with ``EVALYARD_RAY_LOCAL_MODELS=1``, ``local/...`` model calls served by model actors on
the cluster (``evalyard_ray.models``), taken over from evalyard-local through
``wrap_model_provider``: a blocked or absent evalyard-local has no provider to take over.
"""

from __future__ import annotations

import weakref

from evalyard import hookimpl

from .settings import DECLARED, RaySettings

#: Each application's pool of model actors: one per application however often its registry is
#: built again (a plugin added from Python), so actors that served calls are not left behind.
_model_actors: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


@hookimpl
def register_settings(register):
    for name, kind, default, env, help in DECLARED:
        register(name, kind, default, env=env, help=help)


@hookimpl
def register_executors(register, app):
    def ray_executor(concurrency: int):
        from .executor import RayExecutor

        return RayExecutor(concurrency, RaySettings.of(app))

    register("ray", ray_executor)


@hookimpl
def wrap_model_provider(name, handler, app):
    if name != "local" or not app.setting("ray.local_models"):
        return None
    from .models import ModelActors, cluster_provider

    settings = RaySettings.of(app)
    actors = _model_actors.get(app)
    if actors is None or actors.settings != settings:
        actors = _model_actors[app] = ModelActors(settings)
    return cluster_provider(handler, actors)
