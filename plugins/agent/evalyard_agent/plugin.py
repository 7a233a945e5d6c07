"""The evalyard plugin entry point (``[project.entry-points.evalyard] agent``)."""

from evalyard import hookimpl

from .conversation import ConversationGenerator, SimulatedUserGenerator
from .judged import SCORERS as JUDGED, TEMPLATE_DIR
from .tool_call_accuracy import ToolCallAccuracy
from .tool_calls import ToolCalls
from .trajectory_match import TrajectoryMatch

SCORERS = (ToolCalls, TrajectoryMatch, ToolCallAccuracy, *JUDGED)


@hookimpl
def register_scorers(register):
    for scorer in SCORERS:
        register(scorer)


@hookimpl
def register_generators(register):
    register(ConversationGenerator)
    register(SimulatedUserGenerator)


@hookimpl
def register_prompt_templates(register):
    # named agent/<file stem> (the judges' steps, the simulated user); a user's own
    # agent/<stem>.jinja overrides one
    register(TEMPLATE_DIR)
