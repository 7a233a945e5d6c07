"""The evalyard plugin entry point (``[project.entry-points.evalyard] agent``)."""

from pathlib import Path

from evalyard import hookimpl

from .conversation import ConversationGenerator, SimulatedUserGenerator
from .tool_call_accuracy import ToolCallAccuracy
from .tool_calls import ToolCalls
from .trajectory_match import TrajectoryMatch

SCORERS = (ToolCalls, TrajectoryMatch, ToolCallAccuracy)


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
    register(Path(__file__).parent / "prompts")  # agent/simulated_user
