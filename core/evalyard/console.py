"""The ``evalyard`` console script."""

from __future__ import annotations


def main() -> None:
    from .cli import cli

    cli(prog_name="evalyard")
