"""Text that cannot be stored, refused where it comes in.

JSON lets a file write half of a surrogate pair (``"\\ud800"``); Python reads it as a string that
no UTF-8 file, database or terminal takes. Every door (data files, suite files, OTLP requests,
generated output) checks its strings here, so such text is one clear error naming the file, line
and field, instead of a traceback in a hash, an INSERT or an export later.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import InputError


#: What JSON holds besides lists and objects (and what a YAML key may be that JSON writes as text).
JSON_KEYS = (str, int, float, type(None))


def printable(text: str) -> str:
    """``text`` safe to print and store: a lone surrogate written as its escape (``\\ud800``)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _lone_surrogate(text: str) -> str | None:
    """Why ``text`` cannot be stored as UTF-8 (its first lone surrogate and where), or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"text that is not valid Unicode: a lone surrogate {printable(text[exc.start])} at character "
                f"{exc.start + 1} (a \\uD800-\\uDFFF escape without its pair); it cannot be stored")
    return None


def unstorable(value: Any, field: str = "", line: int | None = None, *, json_values: bool = True
               ) -> tuple[str, str, int | None] | None:
    """The first text in ``value`` (a record: objects' keys and values, lists, nested any deep)
    that is not valid Unicode, or value that JSON cannot hold, as (field path, what is wrong,
    line); None when all of it can be stored. ``json_values=False``: only the text is checked
    (a suite file's own settings may hold any YAML value).
    ``line``: where ``value`` is; a YAML mapping or list that remembers its items' lines
    (``suite_files``) gives a closer one."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
        return None  # the common case, checked at C speed
    except (UnicodeEncodeError, TypeError, ValueError, RecursionError):
        pass
    stack: list[tuple[str, Any, int | None]] = [(field, value, line)]
    seen: set[int] = set()  # a YAML alias may make a list hold itself
    while stack:  # a loop, not recursion: a record may be nested deeper than the stack allows
        at, item, where = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            if id(item) in seen:
                continue
            seen.add(id(item))
        if isinstance(item, str):
            problem = _lone_surrogate(item)
            if problem:
                return at, problem, where
        elif isinstance(item, dict):
            key_lines = getattr(item, "key_lines", None) or {}
            where = getattr(item, "line", None) or where
            for key, inner in reversed(list(item.items())):
                name = f"{at}.{printable(str(key))}" if at else printable(str(key))
                stack.append((name, inner, key_lines.get(key, where)))
                if isinstance(key, str) and _lone_surrogate(key) or json_values and not isinstance(key, JSON_KEYS):
                    stack.append((name, key, key_lines.get(key, where)))  # the key itself, before its value
        elif isinstance(item, (list, tuple)):
            item_lines = getattr(item, "item_lines", None) or []
            where = getattr(item, "line", None) or where
            for n in reversed(range(len(item))):
                stack.append((f"{at}[{n}]", item[n], item_lines[n] if n < len(item_lines) else where))
        elif json_values and not isinstance(item, JSON_KEYS):  # YAML's dates, timestamps, !!binary
            return at, (f"expected a JSON value (text, a number, true/false, null, a list or a mapping), got "
                        f"{type(item).__name__} {printable(str(item))[:40]!r} (quote it)"), where
    return None


def check_text(value: Any, *, path: str, line: int | None, field: str = "", json_values: bool = True) -> None:
    """An InputError naming file, line and field when some of ``value`` cannot be stored (``unstorable``)."""
    found = unstorable(value, field, line, json_values=json_values)
    if found is not None:
        at, problem, where = found
        raise InputError(problem, path=path, line=where, field=at or None)


def unstorable_output(text: str | None, messages: list[Any] | None,
                      retrieved: list[Any] | None = None) -> tuple[str, str] | None:
    """(field, what is wrong) of a generated answer that cannot be stored or read back: its text,
    its messages, or the JSON arguments of a tool call it made (a provider's JSON may escape a
    lone surrogate inside them, which scorers and exports meet once the arguments are decoded)."""
    found = unstorable({"text": text, "messages": messages, "retrieved": retrieved}, json_values=False)
    if found is not None:
        return found[0], found[1]
    for n, message in enumerate(messages or ()):
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        for k, call in enumerate(calls if isinstance(calls, list) else ()):
            function = call.get("function") if isinstance(call, dict) else None
            arguments = function.get("arguments") if isinstance(function, dict) else None
            if not isinstance(arguments, str):
                continue
            try:
                decoded = json.loads(arguments)
            except (ValueError, RecursionError):
                continue  # not JSON: the scorers that read it say so, case by case
            found = unstorable(decoded, f"messages[{n}].tool_calls[{k}].function.arguments")
            if found is not None:
                return found[0], found[1]
    return None
