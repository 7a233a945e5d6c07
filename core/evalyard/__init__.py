"""evalyard: a plugin-based platform for evaluating LLM outputs.

Everything a plugin author needs is importable from here::

    from evalyard import hookimpl, Scorer, Case, Score
"""

from .errors import ConfigError, EvalyardError, InputError, PluginError, UnknownNameError
from .hookspecs import hookimpl
from .scoring import Case, Generator, Score, Scorer
from .suite import ScorerSpec, Suite

__version__ = "0.1.0"

__all__ = [
    "Case",
    "ConfigError",
    "EvalyardError",
    "Generator",
    "InputError",
    "PluginError",
    "Score",
    "Scorer",
    "ScorerSpec",
    "Suite",
    "UnknownNameError",
    "hookimpl",
    "__version__",
]
