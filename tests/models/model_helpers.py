"""Helpers shared by the model-layer tests (a module of its own: every folder's conftest is named `conftest`)."""

from __future__ import annotations

import asyncio


async def gather_all(*coroutines):
    """gather() for the run fixture, created on the loop that runs it."""
    return await asyncio.gather(*coroutines)


def user(text):
    return [{"role": "user", "content": text}]
