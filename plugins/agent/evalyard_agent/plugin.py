"""The evalyard plugin entry point (``[project.entry-points.evalyard] agent``)."""

from evalyard import hookimpl

from .tool_call_accuracy import ToolCallAccuracy
from .tool_calls import ToolCalls
from .trajectory_match import TrajectoryMatch

SCORERS = (ToolCalls, TrajectoryMatch, ToolCallAccuracy)


@hookimpl
def register_scorers(register):
    for scorer in SCORERS:
        register(scorer)
