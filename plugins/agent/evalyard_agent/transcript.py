"""A conversation as a judge reads it: one numbered line (or block) per message, the number being
the message's index in ``case.messages``, so a judge's reasons and the per-turn verdicts point at
the same message the report shows."""

from __future__ import annotations

import json
from typing import Any


def text_of(message: dict[str, Any]) -> str:
    """A message's text: its ``content``, or the text parts of a list of content parts."""
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict)
                         and part.get("type", "text") == "text")
    return content or ""


def tool_names(messages: list[dict[str, Any]]) -> dict[str, str]:
    """Tool call id -> the tool's name, so a tool result can say which tool answered."""
    names = {}
    for message in messages:
        for call in message.get("tool_calls") or ():
            names[call.get("id")] = call["function"]["name"]
    return names


def message_lines(index: int, message: dict[str, Any], names: dict[str, str]) -> list[str]:
    role = message.get("role")
    text = text_of(message).strip()
    lines = []
    if role == "tool":
        name = names.get(message.get("tool_call_id"), "a tool")
        return [f"[{index}] tool {name} returned: {text}"]
    if text:
        lines.append(f"[{index}] {role}: {text}")
    for call in message.get("tool_calls") or ():
        function = call["function"]
        arguments = function.get("arguments") or "{}"
        try:  # one spelling of the arguments whatever the application's JSON looked like
            arguments = json.dumps(json.loads(arguments), ensure_ascii=False, sort_keys=True)
        except ValueError:
            pass
        lines.append(f"[{index}] {role} called {function['name']} with {arguments}")
    if not lines:
        lines.append(f"[{index}] {role}: (empty)")
    return lines


def transcript(messages: list[dict[str, Any]], start: int = 0, stop: int | None = None) -> str:
    """Messages ``start`` to ``stop`` (indexes of the whole list), as numbered text."""
    names = tool_names(messages)
    stop = len(messages) if stop is None else stop
    lines = []
    for index in range(max(start, 0), stop):
        lines += message_lines(index, messages[index], names)
    return "\n".join(lines) if lines else "(no messages)"


def assistant_replies(messages: list[dict[str, Any]]) -> list[int]:
    """The indexes of the assistant messages that say something (a message of tool calls alone is
    an action, judged through the tool calls' scorers and the messages that follow it)."""
    return [n for n, m in enumerate(messages) if m.get("role") == "assistant" and text_of(m).strip()]


def system_role(messages: list[dict[str, Any]]) -> str:
    """The role an application gave its assistant: its system (or developer) messages."""
    return "\n\n".join(text_of(m).strip() for m in messages
                       if m.get("role") in ("system", "developer") and text_of(m).strip())
