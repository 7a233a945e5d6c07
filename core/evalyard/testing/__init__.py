"""Test doubles that go through the real model layer: a scripted litellm provider
(``scripted/PATH``) and a fake OpenAI-compatible HTTP server.

Nothing here is imported at start-up; importing this package imports neither litellm
nor an HTTP stack.
"""
