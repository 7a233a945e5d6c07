"""The scripted model: a litellm custom provider that answers from a file of rules.

Use it as ``--judge-model scripted/PATH`` (or any model string ``scripted/PATH``),
where PATH is a YAML or JSONL file of rules. It goes through the whole model layer
(cache, retries, limits, usage), so CI runs are deterministic without a provider.

A rule matches on any of (all given must hold; a rule with none matches everything):

- ``template``: the prompt template's name (shell-style wildcards allowed);
- ``contains``: a substring (or a list of substrings) of the rendered prompt;
- ``regex``: a regular expression searched in the rendered prompt.

It answers with:

- ``content``: text, or a mapping/list sent as JSON text;
- ``tool_calls``: a list of ``{name, arguments}`` (arguments a mapping, or JSON text sent as
  written): the model asks to call those functions (``content`` may then be left out);
- ``logprobs``: top tokens of the first answer token(s), one ``{token: logprob}``
  mapping per position (returned only when the call asks for logprobs);
- ``usage``: ``prompt_tokens``, ``completion_tokens``, optional ``cost`` (USD);
  by default tokens are counted as words and the cost is unknown;
- ``error``: an HTTP status to fail with (429, 500, ...), with optional
  ``retry_after`` seconds; ``times: N`` makes a rule apply N times only, so
  "fail twice, then answer" is two rules;
- ``delay_ms``: wait before answering;
- ``echo: true``: start the reply with the rendered prompt (a judge that quotes
  everything it read, to test that quoted text cannot pass for the verdict).

The first matching rule answers. No matching rule is an error naming the prompt.
The rendered prompt is every message's content joined by blank lines.

With ``EVALYARD_SCRIPTED_LOG=FILE`` set, every answer appends one line to FILE: the
sha256 of the prompt it answered (so a test can count what a provider would have been
asked, across processes).

YAML files hold a list of rules (or ``rules:`` with the list); JSONL one rule a line.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..hookspecs import hookimpl

RULE_KEYS = frozenset({"template", "contains", "regex", "content", "logprobs", "usage", "error", "retry_after",
                       "times", "delay_ms", "echo", "name", "tool_calls"})


class RulesError(ValueError):
    pass


@dataclass
class Rule:
    index: int
    where: str
    template: str | None = None
    contains: list[str] = field(default_factory=list)
    regex: re.Pattern | None = None
    content: str = ""
    logprobs: list[dict[str, float]] | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    error: int | None = None
    retry_after: float | None = None
    times: int | None = None
    delay_ms: float = 0.0
    echo: bool = False
    tool_calls: list[dict[str, Any]] | None = None

    def matches(self, prompt: str, template: str | None) -> bool:
        if self.template is not None and (template is None or not fnmatch.fnmatchcase(template, self.template)):
            return False
        if any(text not in prompt for text in self.contains):
            return False
        return self.regex is None or self.regex.search(prompt) is not None


def _rule(data: Any, index: int, where: str) -> Rule:
    if not isinstance(data, dict):
        raise RulesError(f"{where}: a rule is a mapping, got {type(data).__name__}")
    unknown = set(data) - RULE_KEYS
    if unknown:
        raise RulesError(f"{where}: unknown rule key {sorted(unknown)[0]!r} (known: {', '.join(sorted(RULE_KEYS))})")
    if "content" not in data and "error" not in data and "tool_calls" not in data:
        raise RulesError(f"{where}: a rule needs `content`, `tool_calls` or `error`")
    tool_calls = None
    if data.get("tool_calls") is not None:
        tool_calls = [_tool_call(call, n, where) for n, call in enumerate(data["tool_calls"])]
    content = data.get("content", "")
    if not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)
    contains = data.get("contains") or []
    if isinstance(contains, str):
        contains = [contains]
    try:
        regex = re.compile(data["regex"], re.DOTALL) if data.get("regex") else None
    except re.error as exc:
        raise RulesError(f"{where}: bad regex: {exc}") from None
    logprobs = data.get("logprobs")
    if isinstance(logprobs, dict):
        logprobs = [logprobs]
    return Rule(index=index, where=where, template=data.get("template"), contains=list(contains), regex=regex,
                content=content, logprobs=logprobs, usage=dict(data.get("usage") or {}),
                error=int(data["error"]) if data.get("error") is not None else None,
                retry_after=data.get("retry_after"), times=data.get("times"),
                delay_ms=float(data.get("delay_ms") or 0), echo=bool(data.get("echo")), tool_calls=tool_calls)


def _tool_call(call: Any, n: int, where: str) -> dict[str, Any]:
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise RulesError(f"{where}: tool_calls[{n}] needs a `name`")
    arguments = call.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {"name": call["name"], "arguments": arguments}


def load_rules(path: str | Path) -> list[Rule]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RulesError(f"{path}: cannot read the scripted model's rules ({exc.strerror})") from None
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        rules = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RulesError(f"{path}:{number}: not JSON ({exc.msg})") from None
            rules.append(_rule(data, len(rules), f"{path}:{number}"))
        return rules
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise RulesError(f"{path}{line}: not valid YAML") from None
    if isinstance(data, dict) and "rules" in data:
        data = data["rules"]
    if not isinstance(data, list):
        raise RulesError(f"{path}: expected a list of rules (or `rules:` with a list)")
    return [_rule(item, n, f"{path}: rule {n + 1}") for n, item in enumerate(data)]


def prompt_text(messages: list[dict[str, Any]]) -> str:
    parts = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):  # content parts: keep the text ones
            content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
        parts.append(str(content or ""))
    return "\n\n".join(parts)


def _litellm_error(status: int, message: str, model: str, retry_after: float | None) -> Exception:
    import litellm

    by_status = {400: litellm.BadRequestError, 401: litellm.AuthenticationError, 404: litellm.NotFoundError,
                 408: litellm.Timeout, 429: litellm.RateLimitError, 500: litellm.InternalServerError,
                 503: litellm.ServiceUnavailableError}
    cls = by_status.get(status)
    if cls is None:
        exc: Exception = litellm.APIError(status_code=status, message=message, llm_provider="scripted", model=model)
    else:
        exc = cls(message=message, llm_provider="scripted", model=model)
    if retry_after is not None:
        exc.litellm_response_headers = {"retry-after": str(retry_after)}  # type: ignore[attr-defined]
    return exc


class ScriptedModel:
    """The handler litellm calls for ``scripted/PATH`` model strings (litellm calls a custom
    provider by duck typing: no ``litellm.CustomLLM`` base, so registering it imports nothing)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._files: dict[str, tuple[float, list[Rule]]] = {}
        self._used: dict[tuple[str, int], int] = {}
        #: a file each answered prompt's sha256 is appended to (``evalyard.scripted_log``)
        self.log: str | None = None

    def logging_to(self, log: str | None) -> "ScriptedModel":
        """This model (its rules and answer counts shared) writing its prompts' hashes to ``log``."""
        import copy

        other = copy.copy(self)
        other.log = log
        return other

    def rules(self, path: str) -> list[Rule]:
        try:
            mtime = Path(path).stat().st_mtime
        except OSError:
            mtime = -1.0
        with self._lock:
            cached = self._files.get(path)
            if cached is not None and cached[0] == mtime:
                return cached[1]
        rules = load_rules(path)
        with self._lock:
            self._files[path] = (mtime, rules)
        return rules

    def pick(self, path: str, prompt: str, template: str | None) -> Rule:
        for rule in self.rules(path):
            if not rule.matches(prompt, template):
                continue
            with self._lock:
                used = self._used.get((path, rule.index), 0)
                if rule.times is not None and used >= rule.times:
                    continue
                self._used[(path, rule.index)] = used + 1
            return rule
        shown = prompt if len(prompt) <= 300 else prompt[:300] + "..."
        named = f" (template {template})" if template else ""
        raise LookupError(f"scripted model {path}: no rule matches the prompt{named}: {shown!r}")

    def answer(self, model: str, messages: list, model_response: Any, optional_params: dict,
               litellm_params: dict | None) -> tuple[Rule | None, Any]:
        import litellm

        prompt = prompt_text(messages)
        metadata = (litellm_params or {}).get("metadata") or {}
        template = metadata.get("evalyard_template")
        try:
            rule = self.pick(model, prompt, template)
        except (LookupError, RulesError) as exc:
            raise litellm.BadRequestError(message=str(exc), llm_provider="scripted", model=model) from None
        if rule.error is not None:
            return rule, None
        content = (prompt + "\n\n" + rule.content) if rule.echo else rule.content
        choice: dict[str, Any] = {"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": content}}
        if rule.tool_calls:
            calls = [{"id": f"call_{rule.index}_{n}", "type": "function", "function": dict(call)}
                     for n, call in enumerate(rule.tool_calls)]
            choice.update(finish_reason="tool_calls",
                          message={"role": "assistant", "content": content or None, "tool_calls": calls})
        if optional_params.get("logprobs") and rule.logprobs:
            top_n = int(optional_params.get("top_logprobs") or 0)
            positions = []
            for top in rule.logprobs:
                ranked = sorted(top.items(), key=lambda item: -item[1])
                token, logprob = ranked[0]
                positions.append({"token": token, "logprob": logprob, "bytes": None,
                                  "top_logprobs": [{"token": t, "logprob": lp, "bytes": None}
                                                   for t, lp in ranked[:max(top_n, 1)]]})
            choice["logprobs"] = {"content": positions}
        usage = {"prompt_tokens": int(rule.usage.get("prompt_tokens", len(prompt.split()))),
                 "completion_tokens": int(rule.usage.get("completion_tokens", len(content.split())))}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        response = litellm.ModelResponse(choices=[choice], usage=usage, model=f"scripted/{model}")
        if rule.usage.get("cost") is not None:
            response._hidden_params["evalyard_cost"] = float(rule.usage["cost"])
        if self.log:
            import hashlib

            with open(self.log, "a", encoding="utf-8") as handle:
                handle.write(hashlib.sha256(prompt.encode()).hexdigest() + "\n")
        return rule, response

    def capabilities(self, model: str) -> dict[str, Any]:
        """It answers with tool calls where a rule says so, and takes whatever else is sent."""
        return {"supports_tools": True}

    def _fail(self, rule: Rule, model: str) -> Exception:
        return _litellm_error(rule.error or 500, f"scripted error {rule.error} ({rule.where})", model,
                              rule.retry_after)

    def completion(self, model: str, messages: list, api_base: str, custom_prompt_dict: dict, model_response: Any,
                   print_verbose: Any, encoding: Any, api_key: Any, logging_obj: Any, optional_params: dict,
                   acompletion: Any = None, litellm_params: dict | None = None, logger_fn: Any = None,
                   headers: Any = None, timeout: Any = None, client: Any = None) -> Any:
        rule, response = self.answer(model, messages, model_response, optional_params, litellm_params)
        if rule is not None and rule.delay_ms:
            time.sleep(rule.delay_ms / 1000)
        if response is None:
            raise self._fail(rule, model)
        return response

    async def acompletion(self, model: str, messages: list, api_base: str, custom_prompt_dict: dict,
                          model_response: Any, print_verbose: Any, encoding: Any, api_key: Any, logging_obj: Any,
                          optional_params: dict, acompletion: Any = None, litellm_params: dict | None = None,
                          logger_fn: Any = None, headers: Any = None, timeout: Any = None,
                          client: Any = None) -> Any:
        rule, response = self.answer(model, messages, model_response, optional_params, litellm_params)
        if rule is not None and rule.delay_ms:
            await asyncio.sleep(rule.delay_ms / 1000)
        if response is None:
            raise self._fail(rule, model)
        return response


#: One per process: a rule's ``times`` counts its answers whichever application asked.
SCRIPTED_MODEL = ScriptedModel()


@hookimpl
def register_settings(register):
    register("scripted_log", str, None, env="EVALYARD_SCRIPTED_LOG",
             help="a file the scripted test model appends each answered prompt's sha256 to")


@hookimpl
def register_model_providers(register, app):
    """The core's test double is a plugin like any other (block it with ``EVALYARD_BLOCK_PLUGINS``)."""
    register("scripted", SCRIPTED_MODEL.logging_to(app.setting("evalyard.scripted_log")))
