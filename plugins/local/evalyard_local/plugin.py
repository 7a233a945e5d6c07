"""The evalyard plugin entry point (``[project.entry-points.evalyard] local``).

It registers the ``local/...`` model provider (cheap: nothing is imported from litellm or
llama.cpp until a local model is called) and adds ``evalyard models``.
"""

from evalyard import hookimpl

from .engine import Engine
from .provider import LocalProvider

#: One per process: it holds the loaded models, which every application's provider shares.
ENGINE = Engine()


@hookimpl
def register_settings(register):
    register("n_ctx", int, None, env="EVALYARD_LOCAL_N_CTX", help="context tokens per request (default 4096)")
    register("threads", int, None, env="EVALYARD_LOCAL_THREADS", help="CPU threads (default every available core)")
    register("parallel", int, None, env="EVALYARD_LOCAL_PARALLEL", help="requests a model serves at once (default 1)")


def load_settings(app) -> dict:
    return {key: app.setting(f"local.{key}") for key in ("n_ctx", "threads", "parallel")}


@hookimpl
def register_model_providers(register, app):
    register("local", LocalProvider(ENGINE, models_dir=app.settings.local_models_dir(), load=load_settings(app)))


@hookimpl
def register_commands(cli):
    from .cli import models

    cli.add_command(models)


@hookimpl
def default_judge_model(app):
    """The judge to use when none is configured: the best installed local model, with the
    sentence the core says once, or None."""
    from .files import best_judge

    model = best_judge(app.settings.local_models_dir())
    if model is None:
        return None
    note = (f"no judge model configured: judging with the local model local/{model.name} "
            f"({model.title}, offline). It is small: for stronger judgements pass --judge-model MODEL "
            "or set EVALYARD_JUDGE_MODEL.")
    return f"local/{model.name}", note
