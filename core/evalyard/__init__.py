"""evalyard: a plugin-based platform for evaluating LLM outputs.

Everything a plugin author needs is importable from here, and plugins import nothing else
from the core (the public plugin API, declared in ``__all__``; the names of
``evalyard.plugin_api.LAZY`` load when first used)::

    from evalyard import hookimpl, Scorer, Case, Score, ask

and the Python API::

    import evalyard
    run = evalyard.evaluate("suite.yaml", scorers=["exact_match"])
    print(run.summary["exact_match"]["mean"])
"""

from .api import compare, evaluate, experiment, register_prompt_scorer, resume
from .errors import ConfigError, EvalyardError, InputError, PluginError, UnknownNameError
from .hookspecs import hookimpl, hookspec
from .scoring import Case, Generation, Generator, JudgeError, Score, Scorer
from .settings import Settings
from .suite import ScorerSpec, Suite
from .version import __version__
from . import plugin_api


def __getattr__(name: str):
    # The application pulls in the plugin machinery: loaded only when asked for.
    if name == "Application":
        from . import app

        return app.Application
    if name == "RunResult":
        from . import run_contract

        return run_contract.RunResult
    if name in ("RunRequest", "RunOutcome"):
        from . import run_service

        return getattr(run_service, name)
    from .plugin_api import LAZY, resolve

    if name in LAZY:
        return resolve(name)
    raise AttributeError(f"module 'evalyard' has no attribute {name!r}")


__all__ = [
    "Application",
    "Case",
    "ConfigError",
    "EvalyardError",
    "Generation",
    "Generator",
    "InputError",
    "JudgeError",
    "PluginError",
    "RunOutcome",
    "RunRequest",
    "RunResult",
    "Score",
    "Scorer",
    "ScorerSpec",
    "Settings",
    "Suite",
    "UnknownNameError",
    "compare",
    "evaluate",
    "experiment",
    "hookimpl",
    "hookspec",
    "register_prompt_scorer",
    "resume",
    "__version__",
    *plugin_api.LAZY,
]
