"""Entry point for the ``evalyard`` plugin group: registers the sandbox scorers."""

from evalyard import hookimpl

from .scorer import PythonUnitTesting


@hookimpl
def register_scorers(register):
    register(PythonUnitTesting)
