"""The plugin's settings, declared through ``register_settings`` and read once by the application
(``app.setting("ray.NAME")``); ``RaySettings`` carries them to the executor and the model actors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalyard import InputError

if TYPE_CHECKING:
    from evalyard import Application

#: (name, type, default, environment variable, help)
DECLARED = (
    ("address", str, "", "EVALYARD_RAY_ADDRESS", "the cluster's head HOST:PORT, 'auto' or ray://...; empty: a local instance"),
    ("local_cpus", int, None, "EVALYARD_RAY_LOCAL_CPUS", "CPUs of a local instance (default all)"),
    ("actors", int, None, "EVALYARD_RAY_ACTORS", "actors per (scorer, config) (default as many as the live nodes hold)"),
    ("worker_timeout", float, 120.0, "EVALYARD_RAY_WORKER_TIMEOUT",
     "seconds a scorer may go without a live actor before the run stops as failed"),
    ("local_models", bool, False, "EVALYARD_RAY_LOCAL_MODELS", "serve local/... models from model actors on the cluster"),
    ("model_actors", int, None, "EVALYARD_RAY_MODEL_ACTORS", "model actors (default one per live node)"),
    ("model_cpus", int, 1, "EVALYARD_RAY_MODEL_CPUS", "CPUs per model actor (llama.cpp gets as many threads)"),
)
#: settings that must be at least this much
MINIMUM = {"local_cpus": 1, "actors": 1, "worker_timeout": 1, "model_actors": 1, "model_cpus": 1}


@dataclass(frozen=True)
class RaySettings:
    address: str = ""
    local_cpus: int | None = None
    actors: int | None = None
    worker_timeout: float = 120.0
    local_models: bool = False
    model_actors: int | None = None
    model_cpus: int = 1

    @classmethod
    def of(cls, app: Application) -> "RaySettings":
        """The application's values, checked (a value out of range names its variable)."""
        values = {name: app.setting(f"ray.{name}") for name, *_ in DECLARED}
        for (name, _, _, env, _) in DECLARED:
            low = MINIMUM.get(name)
            if low is not None and values[name] is not None and values[name] < low:
                raise InputError(f"{env}={values[name]!r}: expected at least {low:g} (setting ray.{name})")
        values["address"] = (values["address"] or "").strip()
        return cls(**values)
