"""A case's dialogue fields checked as they are read: ``messages`` (the OpenAI chat format),
``tools`` (the tool schemas the system had) and ``expected_tool_calls`` (the reference trajectory).

Checked once, at the door, so every scorer can trust them: a tool call's ``arguments`` are a
JSON object in a string, a tool result answers an earlier call, every role is one the chat
format knows. Each error is an InputError naming the file, the line and the field's path
(``messages[3].tool_calls[0].function.arguments``).
"""

from __future__ import annotations

import json
from typing import Any

from .errors import InputError
from .valid_text import unstorable

ROLES = ("system", "developer", "user", "assistant", "tool")
#: The OpenAI content parts that carry media rather than text.
MEDIA_PARTS = ("image_url", "input_audio", "file", "image", "audio")


class _Where:
    """The file and line of the record being checked, to name them in an error."""

    def __init__(self, path: str, line: int) -> None:
        self.path, self.line = path, line

    def error(self, message: str, field: str, item: Any = None) -> InputError:
        # An inline YAML case remembers the line of each message (suite_files' _LineDict).
        line = getattr(item, "line", 0) or self.line
        return InputError(message, path=self.path, line=line, field=field)


def _object(value: Any, where: _Where, field: str, item: Any = None) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise where.error(f"expected an object, got {type(value).__name__}", field, item)
    return value


def _list(value: Any, where: _Where, field: str) -> list[Any]:
    if not isinstance(value, list):
        raise where.error(f"expected a list, got {type(value).__name__}", field)
    return value


def _name(value: Any, where: _Where, field: str, item: Any) -> str:
    if not isinstance(value, str) or not value:
        raise where.error("expected a tool name (text)", field, item)
    return value




def check_messages(value: Any, path: str, line: int, field: str = "messages") -> list[dict[str, Any]]:
    where = _Where(path, line)
    messages = _list(value, where, field)
    call_ids: set[str] = set()
    for n, message in enumerate(messages):
        at = f"{field}[{n}]"
        _object(message, where, at)
        role = message.get("role")
        if role not in ROLES:
            raise where.error(f"unknown role {role!r} (known: {', '.join(ROLES)})", f"{at}.role", message)
        content = message.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise where.error("expected text, a list of content parts, or null", f"{at}.content", message)
        if isinstance(content, list):
            _check_parts(content, where, f"{at}.content", message)
        calls = message.get("tool_calls")
        if calls is not None:
            if role != "assistant":
                raise where.error(f"only an assistant message makes tool calls, not {role!r}", f"{at}.tool_calls",
                                  message)
            for k, call in enumerate(_list(calls, where, f"{at}.tool_calls")):
                call_id = _check_call(call, where, f"{at}.tool_calls[{k}]", message)
                if call_id in call_ids:  # a tool result would answer two calls: which one is unknowable
                    raise where.error(f"duplicate tool call id {call_id!r}: an earlier call has it (each call's "
                                      "id is its own, the one its tool result names)", f"{at}.tool_calls[{k}].id",
                                      message)
                call_ids.add(call_id)
        if role == "tool":
            answered = message.get("tool_call_id")
            if not isinstance(answered, str) or answered not in call_ids:
                raise where.error(f"a tool result for {answered!r}, which no earlier tool call has as its id",
                                  f"{at}.tool_call_id", message)
    return messages


def _check_parts(parts: list[Any], where: _Where, at: str, message: Any) -> None:
    """Content parts are text, image (``image_url``) or audio (``input_audio``) parts; the media
    parts' sources are read and checked by ``evalyard.media`` as the case is built. A file part
    (a PDF...) is refused rather than read: nothing could pass it on, so every reader would take
    the message's text alone and the run would report a score anyway."""
    for k, part in enumerate(parts):
        _object(part, where, f"{at}[{k}]", message)
        kind = part.get("type")
        if kind in ("image_url", "input_audio"):
            continue
        if kind != "text":
            if kind in MEDIA_PARTS:
                raise where.error(f"a content part of type {kind!r}: evalyard passes images (image_url) and audio "
                                  "(input_audio) on to models, not files or other media, and refuses them rather "
                                  "than drop them", f"{at}[{k}].type", message)
            raise where.error(f"unknown content part type {kind!r} (known: text, image_url, input_audio)",
                              f"{at}[{k}].type", message)
        if not isinstance(part.get("text"), str):
            raise where.error("expected the part's text (text)", f"{at}[{k}].text", message)


def check_content(value: Any, path: str, line: int, field: str) -> list[dict[str, Any]]:
    """A list of content parts (a case's ``input`` given as parts), checked as a message's are."""
    where = _Where(path, line)
    parts = _list(value, where, field)
    _check_parts(parts, where, field, None)
    return parts


def text_of(content: Any) -> str | None:
    """A message content's text: a string as it is; a list of parts, its text parts joined by
    newlines (what a scorer of text reads of a message that also holds media)."""
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content
                         if isinstance(part, dict) and part.get("type") == "text")
    return content


def _check_call(call: Any, where: _Where, at: str, message: Any) -> str:
    _object(call, where, at, message)
    call_id = call.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise where.error("expected the call's id (text), which its tool result names", f"{at}.id", message)
    if call.get("type", "function") != "function":
        raise where.error(f"unknown tool call type {call.get('type')!r} (known: function)", f"{at}.type", message)
    function = _object(call.get("function"), where, f"{at}.function", message)
    _name(function.get("name"), where, f"{at}.function.name", message)
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        raise where.error(f"expected the arguments as a JSON string (the OpenAI format; \"{{}}\" for a call without "
                          f"arguments), got {type(arguments).__name__}", f"{at}.function.arguments", message)
    try:
        decoded = json.loads(arguments)  # "" too is refused: OpenAI writes "{}" for no arguments
    except (json.JSONDecodeError, RecursionError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        raise where.error(f"arguments are not JSON: {reason}: {arguments!r:.60}", f"{at}.function.arguments",
                          message) from None
    if not isinstance(decoded, dict):
        raise where.error(f"expected the arguments to be a JSON object (\"{{}}\" for a call without arguments), got "
                          f"{'null' if decoded is None else type(decoded).__name__}",
                          f"{at}.function.arguments", message)
    # the JSON text may spell a lone surrogate as an escape ("\\ud800"): the scorers read it decoded
    found = unstorable(decoded, f"{at}.function.arguments")
    if found is not None:
        raise where.error(found[1], found[0], message)
    return call_id


def check_tools(value: Any, path: str, line: int, field: str = "tools") -> list[dict[str, Any]]:
    where = _Where(path, line)
    tools = _list(value, where, field)
    for n, tool in enumerate(tools):
        at = f"{field}[{n}]"
        _object(tool, where, at)
        if tool.get("type", "function") != "function":
            raise where.error(f"unknown tool type {tool.get('type')!r} (known: function)", f"{at}.type", tool)
        function = _object(tool.get("function"), where, f"{at}.function", tool)
        _name(function.get("name"), where, f"{at}.function.name", tool)
        if function.get("parameters") is not None:
            _object(function["parameters"], where, f"{at}.function.parameters", tool)
    return tools


def check_expected_calls(value: Any, path: str, line: int,
                         field: str = "expected_tool_calls") -> list[dict[str, Any]]:
    where = _Where(path, line)
    calls = _list(value, where, field)
    for n, call in enumerate(calls):
        at = f"{field}[{n}]"
        _object(call, where, at)
        unknown = sorted(set(call) - {"name", "arguments"})
        if unknown:
            raise where.error(f"unknown key {unknown[0]!r} (known: name, arguments)", at, call)
        _name(call.get("name"), where, f"{at}.name", call)
        # The rule of the made calls (a JSON object, "{}" for none): a missing or null
        # `arguments` is refused on both sides, never read as "no arguments".
        if call.get("arguments") is None:
            raise where.error("expected the call's arguments (an object; {} for a call without arguments)",
                              f"{at}.arguments", call)
        _object(call["arguments"], where, f"{at}.arguments", call)
    return calls


CHECKS = {"messages": check_messages, "tools": check_tools, "expected_tool_calls": check_expected_calls}


def last_user_text(messages: list[dict[str, Any]]) -> str | None:
    """The content of the last user message, as text (a list of content parts: its text parts
    joined by newlines); None when there is no user message."""
    for message in reversed(messages):
        if message.get("role") == "user":
            return text_of(message.get("content"))
    return None
