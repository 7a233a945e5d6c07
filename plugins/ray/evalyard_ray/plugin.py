"""The plugin's hook: registers the ``ray`` executor (Ray is imported when a run first uses it)."""

from __future__ import annotations

from evalyard import hookimpl


def ray_executor(concurrency: int):
    from .executor import RayExecutor

    return RayExecutor(concurrency)


@hookimpl
def register_executors(register):
    register("ray", ray_executor)
