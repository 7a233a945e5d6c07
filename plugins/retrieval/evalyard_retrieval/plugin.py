"""The evalyard plugin entry point (``[project.entry-points.evalyard] retrieval``)."""

from evalyard import hookimpl

from . import context, pipeline, scorers
from .testset import TEMPLATE_DIR


@hookimpl
def register_scorers(register):
    for scorer in (*scorers.SCORERS, *context.SCORERS):
        register(scorer)


@hookimpl
def register_generators(register):
    # rag/pipeline (a bare "pipeline" works while it is unique): the system under test is the user's RAG pipeline
    register(pipeline.PipelineGenerator, namespace=pipeline.NAMESPACE)


@hookimpl
def register_prompt_templates(register):
    register(TEMPLATE_DIR)


@hookimpl
def register_commands(cli):
    from .testset.cli import testset_group

    cli.add_command(testset_group)
