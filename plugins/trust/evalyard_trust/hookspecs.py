"""The trust plugin's own hooks (declared through ``register_hookspecs``): other plugins add
entailment backends and refusal detectors with ``@evalyard.hookimpl``, so the plugin allow/block
lists, tracing and a test's own plugins apply to them as to every hook of the core.

Implement them with ``@hookimpl(optionalhook=True)`` in a plugin that should still load when
evalyard-trust is blocked or not installed (pluggy otherwise reports an unknown hook).
"""

from evalyard import hookspec


@hookspec
def register_entailment_backends(register):
    """``register(name, factory)``: ``factory(config, runtime)`` returns an object with ``name``,
    ``fingerprint() -> dict`` and ``async entails(premise, hypothesis) -> evalyard_trust.Entailment``.
    Chosen with the scorers' ``entailment`` option."""


@hookspec
def register_refusal_detectors(register):
    """``register(name, factory)``: ``factory(config)`` returns an object with ``name`` and
    ``detect(output) -> evalyard_trust.RefusalVerdict``. Chosen with the scorers' ``refusal`` option."""
