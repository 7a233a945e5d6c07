"""The ``local/...`` litellm provider: ``local/smollm2-135m``, ``local/qwen2.5-coder-1.5b`` or
``local/PATH.gguf`` (``local//abs/path.gguf`` for an absolute path).

litellm calls a custom provider by duck typing (``completion`` / ``acompletion``), so this
class does not subclass ``litellm.CustomLLM``: the plugin registers it through the
``register_model_providers`` hook, and importing litellm there would make every ``evalyard``
command pay for it. litellm is
imported only inside a call, when the model layer has loaded it already.

Request parameters go to llama.cpp's OpenAI-compatible handler as they are (``logprobs``,
``top_logprobs``, ``response_format`` with a JSON schema, a GBNF ``grammar``, ``seed``...).
``n_ctx``, ``n_threads`` and ``n_parallel`` (e.g. from a suite's ``models:`` section) are
load settings, not request parameters. ``cache_prompt`` is on unless a call turns it off: a
request reuses the KV cache of the prefix it shares with its slot's last prompt, exactly
(see engine.py).
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from .engine import Engine, LoadSettings

#: Sent to llama.cpp as they are.
REQUEST_PARAMS = frozenset({
    "temperature", "top_p", "top_k", "min_p", "max_tokens", "stop", "seed", "logprobs", "top_logprobs",
    "response_format", "grammar", "json_schema", "presence_penalty", "frequency_penalty", "repeat_penalty",
    "logit_bias", "n_probs", "cache_prompt", "tools", "tool_choice", "parallel_tool_calls"})
LOAD_PARAMS = frozenset({"n_ctx", "n_threads", "n_parallel"})
#: litellm's own bookkeeping, which reaches custom providers too.
IGNORED_PARAMS = frozenset({"max_retries", "num_retries", "timeout", "stream_options", "user", "extra_body",
                            "extra_headers", "metadata"})
#: Without a limit a small model can ramble until its context is full.
DEFAULT_MAX_TOKENS = 1024
GGUF_MAGIC = b"GGUF"


def _litellm() -> Any:
    from evalyard import load_litellm

    return load_litellm()


def bad_request(message: str, model: str) -> Exception:
    return _litellm().BadRequestError(message=message, llm_provider="local", model=model)


def locate(name: str, directory: Path) -> Path:
    """The file behind a ``local/`` model name (named models in the models ``directory``),
    checked; ModelFileError when it cannot be used."""
    from .catalogue import CATALOGUE, lookup
    from .files import ModelFileError, verified_path

    named = lookup(name)
    if named is not None:
        return verified_path(named, directory)
    if not name.lower().endswith(".gguf"):
        raise ModelFileError(f"local/{name}: not a named local model ({', '.join(CATALOGUE)}) "
                             "nor a path to a .gguf file")
    path = Path(name).expanduser()
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise ModelFileError(f"local/{name}: cannot read {path} ({exc.strerror})") from None
    if magic != GGUF_MAGIC:
        raise ModelFileError(f"local/{name}: {path} is not a GGUF file")
    return path


def build_request(model: str, messages: list[dict[str, Any]], optional_params: dict[str, Any],
                  defaults: dict[str, Any] | None = None) -> tuple[dict[str, Any], LoadSettings]:
    """The llama.cpp request and the load settings, from litellm's arguments."""
    params = dict(optional_params or {})
    load = {key: params.pop(key) for key in LOAD_PARAMS if key in params}
    if params.pop("stream", False):
        raise bad_request("local models do not stream; call without stream=True", model)
    n = params.pop("n", 1)
    if n not in (None, 1):
        raise bad_request("local models give one choice per call (n=1); ask for samples instead", model)
    if "max_completion_tokens" in params:
        params.setdefault("max_tokens", params.pop("max_completion_tokens"))
    unknown = sorted(set(params) - REQUEST_PARAMS - IGNORED_PARAMS)
    if unknown:
        raise bad_request(f"local models do not take the parameter {unknown[0]!r} "
                          f"(they take: {', '.join(sorted(REQUEST_PARAMS | LOAD_PARAMS))})", model)
    request = {key: value for key, value in params.items() if key in REQUEST_PARAMS and value is not None}
    request.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
    request.setdefault("cache_prompt", True)
    request["messages"] = [_plain_message(m) for m in messages]
    try:
        settings = LoadSettings.resolve(**load, defaults=defaults)
    except Exception as exc:
        raise bad_request(str(exc), model) from None
    return request, settings


def _plain_message(message: Any) -> dict[str, Any]:
    data = dict(message) if isinstance(message, dict) else dict(message.model_dump())
    content = data.get("content")
    if isinstance(content, list):  # content parts: local models read the text ones
        data["content"] = "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    elif content is None:
        data["content"] = ""
    # A tool round goes back to the model as llama.cpp's chat template expects it: the assistant's
    # calls (arguments as a JSON string) and each result with the id of the call it answers.
    plain = {key: data[key] for key in ("role", "content") if key in data}
    plain.update({key: data[key] for key in ("tool_calls", "tool_call_id", "name") if data.get(key)})
    return plain


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


def calls_written_as_text(content: str, tools: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The tool calls in a reply that is nothing but calls of the ``tools`` sent, written as JSON
    objects ``{"name": ..., "arguments": {...}}``, bare, fenced or in ``<tool_call>`` tags, which
    llama.cpp left as text: Qwen2.5-Coder writes its calls in a ```json fence that llama.cpp's
    parser does not take. None for any other reply (prose, an unknown name, arguments that are not
    an object), which stays the model's text."""
    names = {(tool.get("function") or {}).get("name") for tool in tools or ()}
    text = content.strip()
    tagged = _TAGGED.findall(text)
    if tagged and not _TAGGED.sub("", text).strip():
        bodies = tagged
    else:
        fenced = _FENCE.match(text)
        bodies = [fenced.group(1) if fenced else text]
    calls = []
    for body in bodies:
        try:
            written = json.loads(body)
        except ValueError:
            return None
        for call in written if isinstance(written, list) else [written]:
            if not isinstance(call, dict) or set(call) != {"name", "arguments"} or call["name"] not in names:
                return None
            arguments = call["arguments"]
            if not isinstance(arguments, dict):
                return None
            calls.append({"type": "function", "function": {"name": call["name"], "arguments": json.dumps(arguments)}})
    return calls or None


def read_calls(result: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """``result`` with the calls of a request that sent ``tools`` as tool calls, also where the
    model wrote them as text (``calls_written_as_text``)."""
    if not request.get("tools") or request.get("tool_choice") == "none":
        return result
    for choice in result.get("choices") or []:
        message = choice.get("message") or {}
        if message.get("tool_calls") or not message.get("content"):
            continue
        calls = calls_written_as_text(message["content"], request["tools"])
        if calls:
            choice["message"] = {**message, "content": None, "tool_calls": calls}
            choice["finish_reason"] = "tool_calls"
    return result


def to_response(model: str, result: dict[str, Any]) -> Any:
    """llama.cpp's OpenAI-shaped dict as a litellm ModelResponse (cost 0: nothing is billed)."""
    litellm = _litellm()
    error = result.get("error")
    if error is not None:
        raise _error(litellm, model, error)
    choices = []
    for raw in result.get("choices") or []:
        message = raw.get("message") or {}
        choice: dict[str, Any] = {"index": raw.get("index", 0), "finish_reason": raw.get("finish_reason"),
                                  "message": {"role": "assistant", "content": message.get("content") or ""}}
        if message.get("tool_calls"):  # parsed by llama.cpp from the model's own tool-call syntax
            choice["message"]["tool_calls"] = [
                {"id": call.get("id") or f"call_{n}", "type": "function",
                 "function": {"name": call["function"]["name"], "arguments": call["function"].get("arguments") or "{}"}}
                for n, call in enumerate(message["tool_calls"])]
        logprobs = raw.get("logprobs")
        if logprobs and logprobs.get("content"):
            choice["logprobs"] = {"content": [_position(p) for p in logprobs["content"]]}
        choices.append(choice)
    if not choices:
        raise litellm.InternalServerError(message="the local model returned no choice", llm_provider="local",
                                          model=model)
    usage = result.get("usage") or {}
    counts: dict[str, Any] = {"prompt_tokens": usage.get("prompt_tokens", 0),
                              "completion_tokens": usage.get("completion_tokens", 0),
                              "total_tokens": usage.get("total_tokens", 0)}
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    if cached is not None:  # the prompt tokens served from the slot's KV cache
        counts["prompt_tokens_details"] = {"cached_tokens": cached}
    response = litellm.ModelResponse(choices=choices, model=f"local/{model}", usage=counts)
    response._hidden_params["evalyard_cost"] = 0.0
    if result.get("timings"):
        response._hidden_params["local_timings"] = result["timings"]
    return response


def _position(entry: dict[str, Any]) -> dict[str, Any]:
    return {"token": entry.get("token", ""), "logprob": entry.get("logprob"), "bytes": entry.get("bytes"),
            "top_logprobs": [{"token": t.get("token", ""), "logprob": t.get("logprob"), "bytes": t.get("bytes")}
                             for t in entry.get("top_logprobs") or []]}


def _error(litellm: Any, model: str, error: dict[str, Any]) -> Exception:
    message = f"local/{model}: {error.get('message') or error}"
    code = error.get("code")
    if error.get("type") == "exceed_context_size_error":
        return litellm.ContextWindowExceededError(message=message + " (raise it with the n_ctx setting)",
                                                  llm_provider="local", model=model)
    if code == 400:
        return litellm.BadRequestError(message=message, llm_provider="local", model=model)
    if code == 503:
        return litellm.ServiceUnavailableError(message=message, llm_provider="local", model=model)
    return litellm.InternalServerError(message=message, llm_provider="local", model=model)


class LocalProvider:
    """The handler behind ``local/...`` model strings (registered through ``register_model_providers``):
    one per application (its models directory, its load settings ``n_ctx``, ``threads``,
    ``parallel``), on an engine that may hold the models of several."""

    def __init__(self, engine: Engine | None = None, *, models_dir: Path, load: dict[str, Any] | None = None) -> None:
        self.engine = engine or Engine()
        self.models_dir = Path(models_dir)
        self.load = dict(load or {})

    def capabilities(self, model: str) -> dict[str, Any]:
        """What the model layer should assume for ``model`` (``local/NAME``) when settings say nothing:
        constrained JSON, logprobs and tool calls (llama.cpp renders ``tools`` with the model's own chat
        template and parses the calls it writes) always; as many requests in flight as the server has slots; and
        judges without reasoning unless a scorer asks for it (a small model's one-word answer is
        readable and fast, its reasoning often never reaches a verdict)."""
        return {"supports_schema": True, "supports_logprobs": True, "supports_seed": True, "supports_tools": True,
                "reasoning": False,
                "concurrency": LoadSettings.resolve(defaults=self.load).n_parallel}

    def check(self, model: str) -> None:
        """Before a run is stored: ``model`` (``local/NAME``) names an installed, intact model file
        (else a ModelFileError that says how to install it)."""
        locate(model.removeprefix("local/"), self.models_dir)

    def _loaded(self, model: str, settings: LoadSettings) -> Any:
        from .files import ModelFileError

        def checked_locate() -> Path:
            try:
                return locate(model, self.models_dir)
            except ModelFileError as exc:
                raise bad_request(str(exc), model) from None

        return self.engine.get(model, checked_locate, settings)

    def completion(self, model: str, messages: list, api_base: Any = None, custom_prompt_dict: Any = None,
                   model_response: Any = None, print_verbose: Any = None, encoding: Any = None,
                   api_key: Any = None, logging_obj: Any = None, optional_params: dict | None = None,
                   acompletion: Any = None, litellm_params: dict | None = None, logger_fn: Any = None,
                   headers: Any = None, timeout: Any = None, client: Any = None) -> Any:
        request, settings = build_request(model, messages, optional_params or {}, self.load)
        return to_response(model, read_calls(self._loaded(model, settings).submit(request).result(), request))

    async def acompletion(self, model: str, messages: list, api_base: Any = None, custom_prompt_dict: Any = None,
                          model_response: Any = None, print_verbose: Any = None, encoding: Any = None,
                          api_key: Any = None, logging_obj: Any = None, optional_params: dict | None = None,
                          acompletion: Any = None, litellm_params: dict | None = None, logger_fn: Any = None,
                          headers: Any = None, timeout: Any = None, client: Any = None) -> Any:
        request, settings = build_request(model, messages, optional_params or {}, self.load)
        # Cancelling the awaiting task cancels a queued request before it runs.
        result = await asyncio.wrap_future(self._loaded(model, settings).submit(request))
        return to_response(model, read_calls(result, request))

    def streaming(self, *args: Any, **kwargs: Any) -> Any:
        raise bad_request("local models do not stream; call without stream=True", kwargs.get("model", ""))

    astreaming = streaming
