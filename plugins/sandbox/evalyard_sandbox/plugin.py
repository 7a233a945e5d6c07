"""Entry point for the ``evalyard`` plugin group: registers the sandbox scorers."""

from evalyard import hookimpl

from .scorer import PythonUnitTesting


@hookimpl
def register_settings(register):
    register("path", str, "/usr/bin:/bin", env="PATH", help="PATH of the sandbox worker process (its only variable)")


@hookimpl
def register_scorers(register):
    register(PythonUnitTesting)
