"""Hook specifications: the whole contract between evalyard and its plugins.

Collection hooks hand the plugin a ``register`` callback instead of asking for a
return value, so the host can stamp which plugin registered what, refuse
duplicate names with an error naming both plugins, and validate types.
"""

import pluggy

hookspec = pluggy.HookspecMarker("evalyard")
hookimpl = pluggy.HookimplMarker("evalyard")


@hookspec
def register_scorers(register):
    """Register scorer classes: ``register(MyScorer)`` for each ``evalyard.Scorer`` subclass."""


@hookspec
def register_generators(register):
    """Register generator classes: ``register(MyGenerator)`` for each ``evalyard.Generator``."""


@hookspec
def register_prompt_templates(register):
    """Register prompt templates: ``register(name, text)`` or ``register(directory)``."""


@hookspec
def register_loaders(register):
    """Register case-file loaders: ``register(".ext", load_function)``.

    ``load_function(path, field_map) -> list[Case]`` raises ``evalyard.InputError``
    naming file, line and field on bad input. JSONL, CSV and YAML are built-ins.
    """


@hookspec
def register_commands(cli):
    """Add click commands or groups to the ``evalyard`` command-line group."""
