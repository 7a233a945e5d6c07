"""evalyard-agent: scorers for conversations and an agent's tool calls (``agent/tool_calls``,
``agent/trajectory_match``, ``agent/tool_call_accuracy``) and judges of conversations
(``agent/goal_success``, ``agent/turn_relevance``, ``agent/knowledge_retention``,
``agent/role_adherence``, ``agent/completeness``)."""
