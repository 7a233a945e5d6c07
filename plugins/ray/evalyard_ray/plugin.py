"""The plugin's hooks: registers the ``ray`` executor (Ray is imported when a run first uses it).

With ``EVALYARD_RAY_LOCAL_MODELS=1`` loading the plugin also routes ``local/...`` model calls to
model actors on the cluster (``evalyard_ray.models``); nothing connects to Ray until a call.
"""

from __future__ import annotations

from evalyard import Settings, hookimpl

#: the switch (read here, so that a run without it never imports the models module)
LOCAL_MODELS = "EVALYARD_RAY_LOCAL_MODELS"


def ray_executor(concurrency: int):
    from .executor import RayExecutor

    return RayExecutor(concurrency)


@hookimpl
def register_executors(register):
    register("ray", ray_executor)


def local_models_enabled() -> bool:
    return (Settings.variable(LOCAL_MODELS) or "").strip().lower() not in ("", "0", "false", "no", "off")


if local_models_enabled():
    from .models import install

    install()
