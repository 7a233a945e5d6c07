"""Test doubles that go through the real model layer: a scripted litellm provider
(``scripted/PATH``) and a fake OpenAI-compatible HTTP server.

Nothing here is imported at start-up; importing this package imports neither litellm
nor an HTTP stack.
"""


async def score_cases(scorer, cases, *, concurrency: int = 16):
    """Score ``cases`` as a run does: through the async executor's per-case path (the one the
    runner uses for model-graded scorers), so tests drive the production path."""
    from ..executors import AsyncExecutor

    return await AsyncExecutor(concurrency).score_batch(scorer, list(cases))
