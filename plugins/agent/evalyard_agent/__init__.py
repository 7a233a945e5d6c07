"""evalyard-agent: scorers for conversations and an agent's tool calls (``agent/tool_calls``,
``agent/trajectory_match``, ``agent/tool_call_accuracy``)."""
