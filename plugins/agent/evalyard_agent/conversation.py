"""Generating conversations: the model under test plays the assistant of a whole dialogue.

Two generators, both making a case's output a conversation (its ``messages``, which the run
stores and its scorers judge; the last assistant answer is the candidate text):

- ``agent/conversation`` plays the user turns written in the case's ``messages`` one after the
  other; the assistant turns between them are generated, whatever the case recorded there.
- ``agent/simulated_user`` gives a second model a goal (``metadata.goal``, else the case's
  ``input``) and a persona, and lets it talk to the model under test until it says the stop
  phrase or ``max_turns`` user turns were played.

When the model under test asks for tools (the case's ``tools`` are sent where its provider takes
them), each call is answered by a Python function the suite registers for that tool
(``functions: {get_weather: "my_tools:get_weather"}``), else by the result the case recorded for
the same call (same name and arguments; else the next unused result of that tool), else by an
error result the model sees. Only functions the user registered ever run: code or commands a
model writes are never executed here (that is the sandbox plugin's business).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from evalyard import Case, ConfigError, Generation, Generator, import_file

if TYPE_CHECKING:
    from evalyard import Runtime

#: The prompt template the simulated user is given (override it in a prompt directory).
SIMULATOR_TEMPLATE = "agent/simulated_user"


def load_function(name: str, target: Any) -> Callable[..., Any]:
    """``module:function`` (an importable module) or ``path/to/file.py:function`` (a file, relative
    to the working directory) -> the callable a suite registered for tool ``name``."""
    module, _, attribute = str(target).rpartition(":")
    if not module or not attribute:
        raise ConfigError(f"functions.{name}: expected 'module:function' or 'file.py:function', got {target!r}")
    try:
        if module.endswith(".py"):
            loaded = import_file(module)  # once per process, as evalyard imports a plugin file
        else:
            loaded = importlib.import_module(module)
        found = getattr(loaded, attribute)
    except (ImportError, AttributeError, OSError) as exc:
        raise ConfigError(f"functions.{name}: cannot load {target!r} ({exc})") from None
    if not callable(found):
        raise ConfigError(f"functions.{name}: {target!r} is not callable")
    return found


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True, ensure_ascii=False)
    except ValueError:
        return arguments


class RecordedResults:
    """The tool results a case recorded, to answer the calls of a generated conversation: by the
    same name and arguments first, else the next unused result of the same tool."""

    def __init__(self, messages: list[dict[str, Any]] | None) -> None:
        calls: dict[str, tuple[str, str]] = {}
        self.exact: dict[tuple[str, str], list[str]] = {}
        self.by_name: dict[str, list[str]] = {}
        for message in messages or ():
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                calls[call.get("id")] = (function.get("name"), _canonical(function.get("arguments")))
            if message.get("role") == "tool" and message.get("tool_call_id") in calls:
                name, arguments = calls[message["tool_call_id"]]
                content = message.get("content")
                content = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
                self.exact.setdefault((name, arguments), []).append(content)
                self.by_name.setdefault(name, []).append(content)

    def answer(self, name: str, arguments: str) -> str | None:
        same = self.exact.get((name, _canonical(arguments)))
        found = same.pop(0) if same else None
        if found is None and self.by_name.get(name):
            found = self.by_name[name].pop(0)
        elif found is not None:
            self.by_name[name].remove(found)
        return found


class _Player(Generator):
    """What both generators share: the assistant's side of a turn, tool calls answered."""

    requires: tuple[str, ...] = ()
    fills = ("candidate", "messages")

    @dataclass
    class Config:
        model: str = field(default="", metadata={"help": "the model under test (a litellm model string)"})
        temperature: float = field(default=0.0, metadata={"help": "the assistant's sampling temperature"})
        max_tokens: int | None = field(default=None, metadata={"help": "longest assistant message, in tokens"})
        max_steps: int = field(default=8, metadata={"help": "model calls per assistant turn (each tool round is one)"})
        functions: dict[str, str] = field(default_factory=dict, metadata={
            "help": "tool name -> 'module:function' answering its calls (called with the call's arguments)"})

    runtime: Runtime | None = None

    def setup(self, runtime: Runtime) -> None:
        if not self.config.model:
            raise ConfigError(f"generator {self.name} needs a model: {self.name}:model=MODEL "
                              "(or `model:` under the suite's generator)")
        if self.config.max_steps < 1:
            raise ConfigError(f"generator {self.name}: max_steps must be 1 or more")
        self.runtime = runtime
        self._functions = {name: load_function(name, target) for name, target in self.config.functions.items()}
        runtime.check_model(self.config.model)

    def _params(self, case: Case) -> dict[str, Any]:
        params: dict[str, Any] = {"temperature": self.config.temperature}
        if self.config.max_tokens is not None:
            params["max_tokens"] = self.config.max_tokens
        if case.tools and self.runtime.models.supports(self.config.model, "tools"):
            params["tools"] = case.tools
        return params

    async def _call_tool(self, call: dict[str, Any], recorded: RecordedResults, tally: dict[str, int]) -> str:
        function = call.get("function") or {}
        name, arguments = function.get("name") or "", function.get("arguments") or "{}"
        registered = self._functions.get(name)
        if registered is not None:
            tally["function_calls"] += 1
            try:
                parsed = json.loads(arguments)
                result = await asyncio.to_thread(registered, **(parsed if isinstance(parsed, dict) else {}))
            except Exception as exc:  # the tool's failure is the model's to handle, as in production
                tally["tool_errors"] += 1
                return json.dumps({"error": f"{type(exc).__name__}: {exc}"})
            return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
        found = recorded.answer(name, arguments)
        if found is not None:
            tally["recorded_results"] += 1
            return found
        tally["unanswered_calls"] += 1
        return json.dumps({"error": f"no result is available for {name}({arguments})"})

    async def _assistant_turn(self, case: Case, history: list[dict[str, Any]], recorded: RecordedResults,
                              tally: dict[str, Any]) -> list[dict[str, Any]]:
        """The assistant's messages answering the end of ``history``: tool rounds, then its text."""
        params = self._params(case)
        said: list[dict[str, Any]] = []
        for _ in range(self.config.max_steps):
            completion = await self.runtime.models.complete(self.config.model, [*history, *said], params=params)
            tally["model_calls"] += 1
            tally["cache_hits"] += int(completion.cached)
            for key, value in completion.usage.to_dict().items():
                if value is not None and key in ("prompt_tokens", "completion_tokens", "cost"):
                    tally["usage"][key] = tally["usage"].get(key, 0) + value
            if not completion.tool_calls:
                said.append({"role": "assistant", "content": completion.text})
                return said
            said.append({"role": "assistant", "content": completion.text or None,
                         "tool_calls": completion.tool_calls})
            for call in completion.tool_calls:
                said.append({"role": "tool", "tool_call_id": call.get("id"),
                             "content": await self._call_tool(call, recorded, tally)})
        tally["stopped"] = "max_steps"  # the model kept calling tools: the turn ends without an answer
        return said

    @staticmethod
    def _tally() -> dict[str, Any]:
        return {"model_calls": 0, "user_calls": 0, "cache_hits": 0, "function_calls": 0, "recorded_results": 0,
                "unanswered_calls": 0, "tool_errors": 0, "usage": {}}

    def _made(self, messages: list[dict[str, Any]], tally: dict[str, Any], **details: Any) -> Generation:
        answers = [m for m in messages if m.get("role") == "assistant" and m.get("content")]
        usage = {**tally.pop("usage"), "cache_hits": tally["cache_hits"]}
        return Generation(text=answers[-1]["content"] if answers else "", messages=messages, usage=usage,
                          details={"model": self.config.model, **details, **tally})


_NEXT_SPEAKER = re.compile(r"\n\s*(?:Assistant|User)\s*:", re.IGNORECASE)


def user_line(text: str) -> str:
    """The simulated user's message in what its model wrote: without the label the model wrote
    anyway, and without what it went on to write as the transcript's next speaker (small models
    continue the chat past their line), nor the quotes it was written in."""
    text = _NEXT_SPEAKER.split(text.strip(), maxsplit=1)[0].strip()
    for label in ("User:", "user:"):
        text = text.removeprefix(label).strip()
    if len(text) > 1 and text[0] == text[-1] == '"' and '"' not in text[1:-1]:  # written as a quotation
        text = text[1:-1].strip()
    elif text.startswith('"') and text.count('"') == 1:  # a quotation whose end was cut off
        text = text[1:].strip()
    return text


class ConversationGenerator(_Player):
    name = "conversation"
    description = ("plays the user turns of the case's messages against the model under test; the assistant "
                   "turns are generated, tool calls answered by registered functions or the case's recorded results")
    requires = ("messages",)

    async def agenerate(self, case: Case) -> Generation:
        recorded = RecordedResults(case.messages)
        script = [m for m in case.messages or () if m.get("role") in ("system", "user")]
        if not any(m["role"] == "user" for m in script):
            raise ValueError("the case's messages have no user turn to play")
        tally = self._tally()
        history: list[dict[str, Any]] = []
        turns = 0
        for message in script:
            history.append({"role": message["role"], "content": message.get("content")})
            if message["role"] == "user":
                turns += 1
                history.extend(await self._assistant_turn(case, history, recorded, tally))
        return self._made(history, tally, user_turns=turns)


class SimulatedUserGenerator(_Player):
    name = "simulated_user"
    description = ("a second model plays a user with a goal (metadata.goal, else the input) and a persona, talking "
                   "to the model under test until it says the stop phrase or max_turns user turns were played")
    requires = ("input",)

    @dataclass
    class Config(_Player.Config):
        user_model: str = field(default="", metadata={"help": "the model playing the user (default: the run's "
                                                               "judge model)"})
        user_temperature: float = field(default=0.7, metadata={"help": "the simulated user's sampling temperature"})
        persona: str = field(default="", metadata={"help": "who the user is (metadata.persona overrides it per case)"})
        max_turns: int = field(default=4, metadata={"help": "user turns at most"})
        stop: str = field(default="[DONE]", metadata={"help": "what the simulated user says when the goal is met "
                                                              "or cannot be"})
        template: str = field(default=SIMULATOR_TEMPLATE, metadata={"help": "the simulated user's prompt template"})

    def setup(self, runtime: Runtime) -> None:
        super().setup(runtime)
        if self.config.max_turns < 1:
            raise ConfigError(f"generator {self.name}: max_turns must be 1 or more")
        self.user_model = self.config.user_model or runtime.judge_model
        if not self.user_model:
            raise ConfigError(f"generator {self.name} needs a user_model (or the run's --judge-model)")
        runtime.check_model(self.user_model)
        try:
            self._template = runtime.prompts.get(self.config.template)
        except Exception as exc:
            raise ConfigError(str(exc)) from None

    def fingerprint_data(self) -> dict[str, Any]:
        data = super().fingerprint_data()
        if self.runtime is not None:
            data.update(user_model=self.user_model, template_hash=self._template.hash)
        return data

    async def _user_says(self, case: Case, history: list[dict[str, Any]], tally: dict[str, Any]) -> str:
        """The simulated user's next message. It reads the chat as a transcript in one prompt
        (small models keep their role better so than in a chat whose roles are swapped), and
        sees what a real user would: the messages, not the tool traffic."""
        lines = [f"{'User' if m['role'] == 'user' else 'Assistant'}: {m['content']}"
                 for m in history if m["role"] in ("user", "assistant") and m.get("content")]
        metadata = case.metadata or {}
        variables = {"goal": str(metadata.get("goal") or case.input or ""),
                     "persona": str(metadata.get("persona") or self.config.persona), "stop": self.config.stop,
                     "transcript": "\n\n".join(lines)}
        rendered = self._template.render({"id": case.id}, variables=variables, reasoning=False)
        params = {**self._template.parameters, "temperature": self.config.user_temperature}
        completion = await self.runtime.models.complete(self.user_model, rendered.messages, params=params,
                                                        template=self._template.name)
        tally["user_calls"] += 1
        return user_line(completion.text)

    def _stops(self, said: str) -> bool:
        """The stop phrase, also as small models write it (``DONE.`` for ``[DONE]``)."""
        bare = re.sub(r"\W", "", self.config.stop).lower()
        return self.config.stop in said or (bool(bare) and re.sub(r"\W", "", said).lower() == bare)

    async def agenerate(self, case: Case) -> Generation:
        recorded = RecordedResults(case.messages)
        tally = self._tally()
        history = [dict(m) for m in case.messages or () if m.get("role") == "system"]
        opening = next((m.get("content") for m in case.messages or () if m.get("role") == "user"), None)
        stopped, turns = "max_turns", 0
        while turns < self.config.max_turns:
            said = opening if turns == 0 and opening else await self._user_says(case, history, tally)
            if turns == 0:  # nothing has been asked yet, so nothing can be done: a stop here is noise
                said = said.replace(self.config.stop, "").strip()
            if not said or self._stops(said):
                stopped = "stop" if said else "user_silent"  # an empty message ends it: nothing to answer
                break
            turns += 1
            history.append({"role": "user", "content": said})
            history.extend(await self._assistant_turn(case, history, recorded, tally))
        if turns == 0:
            raise ValueError(f"the simulated user ended the conversation before its first message ({stopped})")
        return self._made(history, tally, user_model=self.user_model, user_turns=turns,
                          stopped=tally.pop("stopped", stopped))
