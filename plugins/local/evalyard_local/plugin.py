"""The evalyard plugin entry point (``[project.entry-points.evalyard] local``).

It registers the ``local/...`` model provider (cheap: nothing is imported from litellm or
llama.cpp until a local model is called) and adds ``evalyard models``.
"""

from evalyard import hookimpl

from .provider import LocalProvider

#: One per process: it holds the loaded models, which every application shares.
PROVIDER = LocalProvider()


@hookimpl
def register_model_providers(register):
    register("local", PROVIDER)


@hookimpl
def register_commands(cli):
    from .cli import models

    cli.add_command(models)


@hookimpl
def default_judge_model():
    """The judge to use when none is configured: the best installed local model, with the
    sentence the core says once, or None."""
    from .files import best_judge

    model = best_judge()
    if model is None:
        return None
    note = (f"no judge model configured: judging with the local model local/{model.name} "
            f"({model.title}, offline). It is small: for stronger judgements pass --judge-model MODEL "
            "or set EVALYARD_JUDGE_MODEL.")
    return f"local/{model.name}", note
