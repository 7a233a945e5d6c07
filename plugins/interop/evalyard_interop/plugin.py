"""The evalyard plugin entry point (``[project.entry-points.evalyard] interop``)."""

from evalyard import hookimpl


@hookimpl
def register_loaders(register):
    from .inspect_log import load_inspect_log
    from .promptfoo import load_promptfoo

    # promptfoo writes plain .json, which stays the core's format: promptfoo's is chosen by name only.
    register("promptfoo", load_promptfoo)
    # .eval is inspect_ai's own ending and no core format claims it; its .json logs need the name.
    register("inspect", load_inspect_log, extensions=(".eval",))
