"""Settings of one application: where the data lives and which plugins load.

Read once from the environment (``Settings.from_env``) by the CLI, or built directly by
Python callers and tests. Nothing here is global: every ``Application`` has its own. This is
the one module that reads ``os.environ``: everything else reads the snapshot in ``Settings.env``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping


def _names(raw: str | None) -> frozenset[str] | None:
    if raw is None:
        return None
    return frozenset(name.strip() for name in raw.split(",") if name.strip())


@dataclass(frozen=True)
class Settings:
    """What an application needs to know before it loads anything.

    - ``home``: the data directory (``EVALYARD_HOME``; default the platform's user data dir).
    - ``db_url``: any SQLAlchemy URL or a SQLite file path (``EVALYARD_DB``; default
      ``evalyard.db`` in ``home``).
    - ``entry_points``: load installed plugins of the ``evalyard`` entry-point group.
    - ``load_plugins``: allow-list of entry-point plugin names and of the extra namespaces they
      register under (``EVALYARD_LOAD_PLUGINS``; set, even empty, means only those).
      ``block_plugins``: never load these plugins or namespaces, built-ins included
      (``EVALYARD_BLOCK_PLUGINS``).
    - ``extra_plugins``: modules or ``.py`` files to load as plugins (``EVALYARD_EXTRA_PLUGINS``).
    - ``trace_plugins``: print every hook call to stderr (``EVALYARD_TRACE_PLUGINS=1``).
    - ``judge_model``: the model judges use when a scorer names none (``EVALYARD_JUDGE_MODEL``).
    - ``prompt_dirs``: the user's prompt-template directories, overriding plugins' and
      built-in templates of the same name (``EVALYARD_PROMPTS``, ``os.pathsep``-separated).
    - ``models_dir``: where installed local models live (``EVALYARD_MODELS_DIR``; default a cache
      of their own, the platform's user cache dir). Not under ``home``: a private home or
      database for one project must not hide the gigabyte-sized models every home shares.
    - ``otel_endpoint``: the OTLP/HTTP base URL ``run --otel`` sends a run to
      (``EVALYARD_OTEL_ENDPOINT``, else OpenTelemetry's own ``OTEL_EXPORTER_OTLP_ENDPOINT``;
      default ``http://localhost:4318``).
    - ``env``: the environment the application was started with (``from_env`` takes a copy;
      empty for settings built in Python). Plugins' typed settings (``register_settings``) and
      values named at run time (the API-key variable a suite's ``models:`` names) are read from
      it, never from the process environment.
    - ``plugin_settings``: values of plugins' settings by ``namespace.name``
      (``{"embedding.cache_mb": 64}``); they win over ``env``.
    """

    home: Path | None = None
    db_url: str | None = None
    entry_points: bool = True
    load_plugins: frozenset[str] | None = None
    block_plugins: frozenset[str] = frozenset()
    extra_plugins: tuple[str, ...] = ()
    trace_plugins: bool = False
    judge_model: str | None = None
    prompt_dirs: tuple[str, ...] = ()
    models_dir: Path | None = None
    otel_endpoint: str | None = None
    # Not in repr (an API key must not reach a log line) and not compared.
    env: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)
    plugin_settings: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides) -> "Settings":
        env = os.environ if env is None else env
        values = dict(
            home=Path(env["EVALYARD_HOME"]) if env.get("EVALYARD_HOME") else None,
            db_url=env.get("EVALYARD_DB") or None,
            load_plugins=_names(env.get("EVALYARD_LOAD_PLUGINS")),
            block_plugins=_names(env.get("EVALYARD_BLOCK_PLUGINS")) or frozenset(),
            extra_plugins=tuple(sorted(_names(env.get("EVALYARD_EXTRA_PLUGINS")) or ())),
            trace_plugins=bool(env.get("EVALYARD_TRACE_PLUGINS")),
            judge_model=env.get("EVALYARD_JUDGE_MODEL") or None,
            prompt_dirs=tuple(d for d in (env.get("EVALYARD_PROMPTS") or "").split(os.pathsep) if d),
            models_dir=Path(env["EVALYARD_MODELS_DIR"]).expanduser() if env.get("EVALYARD_MODELS_DIR") else None,
            otel_endpoint=env.get("EVALYARD_OTEL_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or None,
            env=dict(env),
        )
        values.update(overrides)
        return cls(**values)

    def data_dir(self) -> Path:
        if self.home is not None:
            return self.home
        import platformdirs

        return Path(platformdirs.user_data_dir("evalyard", appauthor=False))

    def local_models_dir(self) -> Path:
        """Where installed local models live, whatever the data directory."""
        if self.models_dir is not None:
            return self.models_dir
        import platformdirs

        return Path(platformdirs.user_cache_dir("evalyard", appauthor=False)) / "models"

    def database_url(self, override: str | None = None) -> str:
        """The database to open: an explicit URL, else the settings', else the data directory's SQLite file."""
        url = override or self.db_url
        if not url:
            return f"sqlite:///{self.data_dir() / 'evalyard.db'}"
        if "://" not in url:  # a bare path is a SQLite file
            return f"sqlite:///{Path(url).expanduser()}"
        return url
