"""The model layer: every model call of every plugin goes through :class:`ModelLayer`.

One call is: cache lookup -> cost check -> (per-model limit, rate limit, global request
cap) -> litellm ``acompletion`` with litellm's own retries off -> on failure, classify,
cut the per-model limit on pushback, back off and retry -> record usage -> cache put.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping

from .background import shared_loop
from .cache import MemoryCache, ResponseCache
from .errors import CostLimitReached, ModelCallError, StructuredOutputError
from .trial import current_trial
from .keys import cache_key, key_inputs
from .limits import AdaptiveLimit, RequestRate, Slots
from .records import CallRecord, CallUsage, Completion, PlannedRequest
from .retry import RetryPolicy, classify
from .usage import UsageMeter

_warmed = False


def warm_provider_clients() -> None:
    """Import, once per process and outside any timed span, what litellm's OpenAI route imports
    on its first request (the openai SDK's chat resources: seconds in a cold process). Otherwise
    the first calls of a run pay it as latency, and a grid's first cell looks slower than the
    others for being first (benchmarks/RESULTS.md, "First-call latency")."""
    global _warmed
    if _warmed:
        return
    _warmed = True
    try:
        import openai.resources.chat  # noqa: F401
    except ImportError:  # another provider's SDK only: nothing of OpenAI's to warm
        pass

log = logging.getLogger("evalyard.models")


@dataclass
class ModelSettings:
    """Provider settings for one model string (the suite's ``models:`` section).

    ``api_key_env`` names the environment variable holding the key, so keys never sit
    in suite files. ``params`` are extra request parameters sent with every call.
    ``supports_schema`` / ``supports_logprobs`` / ``supports_vision`` / ``supports_audio_input``
    override what litellm knows (useful for
    ``openai/<name>`` on a local server, which litellm cannot look up). ``batch`` sends this
    model's calls as provider batch jobs (``run --batch`` does it for every model that can);
    ``batch_poll_s`` is how often a job is polled.
    """

    api_base: str | None = None
    api_key_env: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    concurrency: int | None = None
    rpm: float | None = None
    timeout: float | None = None
    supports_schema: bool | None = None
    supports_logprobs: bool | None = None
    supports_vision: bool | None = None
    supports_audio_input: bool | None = None
    batch: bool | None = None
    batch_poll_s: float | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ModelSettings":
        known = {f for f in cls.__dataclass_fields__}
        extra = {k: v for k, v in data.items() if k not in known}
        values = {k: v for k, v in data.items() if k in known}
        params = dict(values.pop("params", None) or {})
        params.update(extra)  # unknown keys are request parameters (e.g. seed, top_p)
        return cls(params=params, **values)


@dataclass
class StructuredAnswer:
    """A JSON answer read from a reply; ``completions`` holds the call and any repair call."""

    value: Any
    text: str
    completions: list[Completion]
    mode: str  # "schema" (sent through the API) or "prompt" (schema in the prompt)
    repaired: bool = False


class ModelLayer:
    """Async model calls with cache, retries, limits, structured output and usage accounting.

    ``concurrency`` caps requests in flight across all models (a run's ``--concurrency``);
    each model is further limited to ``per_model_concurrency`` (or its settings'
    ``concurrency``), cut in half when the provider pushes back. Sync wrappers
    (``complete_sync``, ``complete_json_sync``) run on the process's background loop.

    ``providers`` maps model-string prefixes to our own providers (``scripted``, ``local``...):
    an application's (its registry's ``providers``); a layer made without them has litellm's
    providers only. ``env`` is the environment the variables a suite's ``models:`` names
    (``api_key_env``) are read from: the application's ``Settings.env``.
    """

    def __init__(self, *, cache: ResponseCache | None = None, use_cache: bool = True, concurrency: int = 16,
                 per_model_concurrency: int | None = None, timeout: float = 60.0,
                 retry: RetryPolicy | None = None, settings: dict[str, ModelSettings] | None = None,
                 usage: UsageMeter | None = None, judge_model: str | None = None, seed: int | None = None,
                 providers: dict[str, Any] | None = None, env: Mapping[str, str] | None = None) -> None:
        self.cache = cache if cache is not None else MemoryCache()
        self.use_cache = use_cache
        self.concurrency = concurrency
        self.per_model_concurrency = per_model_concurrency or concurrency
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.settings = dict(settings or {})
        self.usage = usage or UsageMeter()
        self.judge_model = judge_model
        self._requests = Slots(concurrency)
        self._limits: dict[str, AdaptiveLimit] = {}
        self._rates: dict[str, RequestRate] = {}
        self._rng = random.Random(seed)
        self._background = shared_loop()
        self._litellm: Any = None
        self._support: dict[tuple[str, str], bool] = {}  # (model, parameter) -> the provider takes it
        self.providers: dict[str, Any] = dict(providers or {})
        self.env: Mapping[str, str] = env if env is not None else {}
        #: Provider batch jobs (``run --batch``): set by the run's runtime; ``batch_all`` sends
        #: every model that can be batched, otherwise only models whose settings say ``batch``.
        self.batch: Any = None
        self.batch_all = False
        #: calls in flight by cache key: an identical request made meanwhile waits for that call
        #: instead of sending its own (``_coalesced``)
        self._in_flight: dict[str, _InFlight] = {}
        #: sha256 -> (type, bytes) of a case's media: the run's store (``Store.media``), set with
        #: its cache. Requests name media by hash (so keys stay small and fixed); the bytes are put
        #: in only as a request is sent (``evalyard.media.inline``).
        self.media_reader: Callable[[str], tuple[str, bytes]] | None = None

    # -- configuration -------------------------------------------------------
    def settings_for(self, model: str) -> ModelSettings:
        return self.settings.get(model) or ModelSettings()

    def provider_of(self, model: str) -> Any:
        """The provider of ours behind ``model``, or None (litellm's own providers)."""
        return self.providers.get(model.split("/", 1)[0])

    def capabilities(self, model: str) -> dict[str, Any]:
        from .providers import capabilities

        handler = self.provider_of(model)
        return {} if handler is None else capabilities(handler, model)

    async def acompletion(self, model: str, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        """One raw litellm call, routed to this layer's own provider for ``model``'s prefix (handed
        through the call's context: see ``providers.py``). A prefix a provider of ours serves in
        another application but not in this one (its plugin blocked) is refused."""
        from .providers import calling, dispatched, install

        messages = self.inline_media(messages)
        prefix = model.split("/", 1)[0]
        if "/" in model and prefix in self.providers:
            install(self.litellm, prefix)
        elif "/" in model and dispatched(self.litellm, prefix):
            raise ModelCallError(f"model {model}: no loaded plugin provides {prefix}/ models here "
                                 "(is its plugin blocked or not allowed?)", model=model, status=None, attempts=0,
                                 retryable=False)
        with calling(self.providers):
            return await self.litellm.acompletion(model=model, messages=messages, **kwargs)

    def inline_media(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The messages with the bytes of the media they name by hash, as a provider takes them."""
        from ..media import inline, references

        if self.media_reader is None:
            missing = next(references(messages), None)
            if missing is not None:
                raise ModelCallError(f"media {missing[:12]} named, but this model layer has no store to read "
                                     "it from", model="", status=None, attempts=0, retryable=False)
            return messages
        return inline(messages, self.media_reader)

    def limit_for(self, model: str) -> AdaptiveLimit:
        limit = self._limits.get(model)
        if limit is None:
            size = (self.settings_for(model).concurrency or self.capabilities(model).get("concurrency")
                    or self.per_model_concurrency)
            limit = self._limits.setdefault(model, AdaptiveLimit(size))
        return limit

    def _rate_for(self, model: str) -> RequestRate | None:
        rpm = self.settings_for(model).rpm
        if rpm is None:
            return None
        return self._rates.setdefault(model, RequestRate(rpm))

    @property
    def litellm(self) -> Any:
        if self._litellm is None:
            from .providers import load_litellm

            self._litellm = load_litellm()
        return self._litellm

    def supports_schema(self, model: str) -> bool:
        from .providers import supports_response_schema

        declared = self.settings_for(model).supports_schema
        if declared is None:
            declared = self.capabilities(model).get("supports_schema")
        if declared is not None:
            return declared
        return supports_response_schema(self.litellm, model)

    def supports_logprobs(self, model: str) -> bool | None:
        from .providers import supports_logprobs

        declared = self.settings_for(model).supports_logprobs
        if declared is None:
            declared = self.capabilities(model).get("supports_logprobs")
        if declared is not None:
            return declared
        return supports_logprobs(self.litellm, model)

    def takes_media(self, model: str, kind: str) -> bool:
        """Whether ``model`` takes ``kind`` of media ("image", "audio") in its requests: the model's
        settings (``supports_vision``, ``supports_audio_input``), else its provider's declared
        capabilities (one of ours), else litellm's model map."""
        from .providers import supports_media

        key = "supports_vision" if kind == "image" else "supports_audio_input"
        declared = getattr(self.settings_for(model), key)
        if declared is None and self.provider_of(model) is not None:
            declared = bool(self.capabilities(model).get(key))
        if declared is not None:
            return bool(declared)
        return supports_media(self.litellm, model, kind)

    def reasons_by_default(self, model: str) -> bool:
        """Whether judges ask this model for reasoning before its answer when a scorer does not say:
        yes, unless the model's provider says it answers better without (small local models)."""
        return bool(self.capabilities(model).get("reasoning", True))

    def request_params(self, model: str, params: dict[str, Any] | None = None,
                       logprobs: int | None = None) -> dict[str, Any]:
        """The parameters sent (and hashed into the key): settings' params, then the call's."""
        merged = dict(self.settings_for(model).params)
        merged.update(params or {})
        if logprobs:
            merged["logprobs"] = True
            merged["top_logprobs"] = int(logprobs)
        trial = current_trial()
        if trial is not None and self.supports(model, "seed"):  # each epoch a reproducible sample
            merged["seed"] = int(merged.get("seed") or 0) + trial.epoch
        return merged

    def supports(self, model: str, param: str) -> bool:
        """Whether the provider takes the request parameter ``param`` (``seed``, ``tools``): a
        provider of ours says so in its capabilities (``supports_<param>``; litellm's list for a
        custom provider depends on whether it was installed yet, so it is not asked); another, by
        litellm's list of the model's parameters. Asked once per model and parameter."""
        from .providers import supports_param

        known = self._support
        if (model, param) not in known:
            if self.provider_of(model) is not None:
                known[model, param] = bool(self.capabilities(model).get(f"supports_{param}"))
            else:
                known[model, param] = bool(supports_param(self.litellm, model, param))
        return known[model, param]

    def planned(self, model: str, messages: list[dict[str, Any]], *, params: dict[str, Any] | None = None,
                sample: int = 0, logprobs: int | None = None, answer: str = "text") -> PlannedRequest:
        """The request :meth:`complete` would send, with its cache key, without sending it. A
        case's media parts are named by their hash (``evalyard.media.request_messages``)."""
        from ..media import request_messages

        messages = request_messages(messages)
        sent = self.request_params(model, params, logprobs)
        return PlannedRequest(model, messages, sent, sample, cache_key(model, messages, sent, sample, _epoch()),
                              answer=answer)

    def json_request(self, model: str, messages: list[dict[str, Any]], schema: dict[str, Any], *,
                     params: dict[str, Any] | None = None, schema_name: str = "answer",
                     instructions: str | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The first call of :meth:`complete_json` (messages, params): the schema through the
        provider where the model takes one, else in the prompt. A plan renders it the same way."""
        from .structured import response_format_for, schema_instructions

        if self.supports_schema(model):
            return list(messages), {**(params or {}), "response_format": response_format_for(schema, schema_name)}
        return _append_to_last_user(messages, instructions or schema_instructions(schema)), dict(params or {})

    # -- one call ----------------------------------------------------------------
    async def complete(self, model: str, messages: list[dict[str, Any]], *, params: dict[str, Any] | None = None,
                       sample: int = 0, logprobs: int | None = None, template: "str | tuple[str, ...] | None" = None,
                       no_cache: bool = False) -> Completion:
        """One chat completion. ``logprobs=k`` asks for the top-k alternatives of each token.

        Raises :class:`ModelCallError` once retries are spent, :class:`CostLimitReached`
        when the run's ``max_cost`` is reached before the call would start.
        """
        planned = self.planned(model, messages, params=params, sample=sample, logprobs=logprobs)
        sent, key, messages = planned.params, planned.key, planned.messages
        inputs = key_inputs(model, messages, sent, sample, _epoch())
        if self.use_cache and not no_cache:
            record = await self._cache_get(key)
            if record is not None:
                completion = Completion.from_record(key, record)
                completion.key_inputs = inputs
                self.usage.record(completion)
                log.debug("cache hit %s for %s", key[:12], model, extra={"key_inputs": inputs})
                return completion
        log.debug("cache miss %s for %s", key[:12], model, extra={"key_inputs": inputs})
        if not self.use_cache or no_cache:  # asked not to reuse answers: every request is its own call
            return await self._fresh(model, messages, sent, key, inputs, template)
        return await self._coalesced(key, lambda: self._fresh(model, messages, sent, key, inputs, template))

    async def _fresh(self, model: str, messages: list[dict[str, Any]], sent: dict[str, Any], key: str,
                     inputs: dict[str, Any], template: "str | tuple[str, ...] | None") -> Completion:
        """The call itself (a cache miss): sent, its usage recorded, its answer cached."""
        if self._batched(model):
            completion = await self.batch.request(model, messages, sent, key, inputs)  # it caches the answer
            completion.key_inputs = inputs
            self.usage.record(completion)
            return completion
        completion = await self._call_with_retries(model, messages, sent, key, template)
        completion.key_inputs = inputs
        self.usage.record(completion)
        record = CallRecord(model=model, request=inputs, response=completion.to_response(),
                            usage=completion.usage.to_dict(), latency_ms=completion.latency_ms)
        await self._cache_put(key, record)  # only answers get here: errors are never cached
        return completion

    async def _coalesced(self, key: str, call: Callable[[], Any]) -> Completion:
        """One call per cache key in flight: an identical request made while it runs waits for
        it and gets the same answer (counted as a cache hit, as it would be a moment later) or
        the same error, so ``--plan``'s forecast and the provider's bill agree. The call runs as
        its own task: a cancelled waiter leaves it to the others; it is cancelled only when
        every waiter is gone."""
        loop = asyncio.get_running_loop()
        shared = self._in_flight.get(key)
        if shared is not None and shared.task.get_loop() is not loop:
            shared = None  # another loop's call (a second event loop in this process): not awaitable here
        owner = shared is None
        if owner:
            shared = _InFlight(loop.create_task(call()))
            self._in_flight[key] = shared
            shared.task.add_done_callback(lambda task, key=key: self._forget(key, task))
        shared.waiters += 1
        try:
            completion = await asyncio.shield(shared.task)
        except asyncio.CancelledError:
            shared.waiters -= 1
            if shared.waiters == 0 and not shared.task.done():
                shared.task.cancel()
            raise
        shared.waiters -= 1
        if owner:
            return completion
        joined = dataclasses.replace(completion, cached=True, attempts=0)
        self.usage.record(joined)
        return joined

    def _forget(self, key: str, task: "asyncio.Task[Any]") -> None:
        shared = self._in_flight.get(key)
        if shared is not None and shared.task is task:
            del self._in_flight[key]
        if not task.cancelled():
            task.exception()  # retrieved: a failed call nobody waits for any more is not logged as lost

    def _batched(self, model: str) -> bool:
        if self.batch is None:
            return False
        from .providers import batchable

        wanted = self.settings_for(model).batch
        return batchable(model) and (wanted if wanted is not None else self.batch_all)

    async def _cache_get(self, key: str) -> CallRecord | None:
        if getattr(self.cache, "blocking", False):
            return await asyncio.to_thread(self.cache.get, key)
        return self.cache.get(key)

    async def _cache_put(self, key: str, record: CallRecord) -> None:
        if getattr(self.cache, "blocking", False):
            await asyncio.to_thread(self.cache.put, key, record)
        else:
            self.cache.put(key, record)

    async def _call_with_retries(self, model: str, messages: list[dict[str, Any]], params: dict[str, Any],
                                 key: str, template: "str | tuple[str, ...] | None") -> Completion:
        settings = self.settings_for(model)
        timeout = settings.timeout or self.timeout
        kwargs = self._connection_kwargs(model, settings, timeout, template, params)
        response, latency_ms, attempt = await self.send_with_retries(
            model, lambda: self.acompletion(model, messages, **params, **kwargs), timeout)
        return self._completion(model, response, key, latency_ms, attempt)

    async def send_with_retries(self, model: str, request: Callable[[], Awaitable[Any]],
                                timeout: float) -> tuple[Any, float, int]:
        """``request()`` (one provider request: a chat completion, an embedding) under ``model``'s
        concurrency limit and rate, retried by the layer's policy; (response, latency in ms,
        attempts). Raises ModelCallError once the failure is not retryable or retries are spent."""
        limit = self.limit_for(model)
        rate = self._rate_for(model)
        attempt = 0
        while True:
            attempt += 1
            self.usage.check()
            window = await limit.acquire()
            try:
                if rate is not None:
                    await rate.wait()
                async with self._requests:
                    warm_provider_clients()
                    started = time.perf_counter()
                    try:
                        response = await asyncio.wait_for(request(), timeout)
                    except (asyncio.CancelledError, CostLimitReached):
                        raise
                    except Exception as exc:  # every provider failure is sorted below
                        failure = exc
                    else:
                        failure = None
                    latency_ms = (time.perf_counter() - started) * 1000
            finally:
                limit.release()
            if failure is None:
                limit.success()
                self.usage.record_attempts(attempt, attempt - 1)
                return response, latency_ms, attempt
            kind = classify(failure)
            if kind.pushback:
                limit.pushback(window)
            too_long = kind.retry_after is not None and kind.retry_after > self.retry.max_retry_after
            if not kind.retryable or attempt >= self.retry.max_attempts or too_long:
                self.usage.record_attempts(attempt, attempt - 1)
                self.usage.record_error()
                message = _describe(failure)
                if kind.retryable:
                    message += f" (gave up after {attempt} attempts)"
                raise ModelCallError(message, model=model, status=kind.status, attempts=attempt,
                                     retryable=kind.retryable) from failure
            delay = self.retry.delay(attempt, kind.retry_after, self._rng)
            log.debug("%s: %s; retry %d in %.2fs", model, _describe(failure), attempt, delay)
            await asyncio.sleep(delay)

    def _connection_kwargs(self, model: str, settings: ModelSettings, timeout: float,
                           template: "str | tuple[str, ...] | None", params: dict[str, Any] | None = None) -> dict[str, Any]:
        # litellm's own retries stay off so that every 429 reaches our limiter.
        kwargs: dict[str, Any] = {"num_retries": 0, "max_retries": 0, "timeout": timeout}
        if settings.api_base:
            kwargs["api_base"] = settings.api_base
        if settings.api_key_env:
            value = self.env.get(settings.api_key_env)
            if not value:
                from ..errors import ConfigError

                raise ConfigError(f"model {model}: environment variable {settings.api_key_env} "
                                  "(its api_key_env) is not set")
            kwargs["api_key"] = value
        elif settings.api_base and model.startswith("openai/"):
            # An OpenAI-compatible local server usually wants no key, but the client insists on one.
            kwargs["api_key"] = self.env.get("OPENAI_API_KEY") or "no-key"
        # litellm (1.106) routes any call with `tools` through its MCP gateway first, which imports
        # the `mcp` package: evalyard never asks for MCP tools, so that detour is skipped.
        if params and params.get("tools"):
            kwargs["_skip_mcp_handler"] = True
        # Only our own providers read it (the scripted model matches rules on it); for the
        # others litellm would build a logging payload from it on every call.
        if template and self.provider_of(model) is not None:
            kwargs["metadata"] = {"evalyard_template": template}
        return kwargs

    def _completion(self, model: str, response: Any, key: str, latency_ms: float, attempts: int) -> Completion:
        from .logprobs import from_response
        from .providers import cost_of

        choice = response.choices[0]
        message = getattr(choice, "message", None)
        text = getattr(message, "content", None) or ""
        raw_usage = getattr(response, "usage", None)
        usage = CallUsage(prompt_tokens=getattr(raw_usage, "prompt_tokens", None),
                          completion_tokens=getattr(raw_usage, "completion_tokens", None),
                          cost=cost_of(self.litellm, response, model),  # litellm prices cached input lower
                          cached_prompt_tokens=_cached_tokens(raw_usage))
        return Completion(model=model, text=text, key=key, usage=usage, latency_ms=latency_ms,
                          logprobs=from_response(choice), finish_reason=getattr(choice, "finish_reason", None),
                          attempts=attempts, tool_calls=_tool_calls(message))

    # -- structured output ------------------------------------------------------
    async def complete_json(self, model: str, messages: list[dict[str, Any]], schema: dict[str, Any], *,
                            params: dict[str, Any] | None = None, sample: int = 0,
                            template: "str | tuple[str, ...] | None" = None,
                            no_cache: bool = False, schema_name: str = "answer",
                            read: Callable[[str], Any] | None = None, instructions: str | None = None,
                            repair: bool = True) -> StructuredAnswer:
        """A JSON answer fitting ``schema``: the one structured-output strategy of evalyard.

        1. the provider's ``response_format`` where the model supports JSON schema (a provider
           that refuses it with a 400 is asked again with the schema in the prompt);
        2. otherwise the schema in the prompt (``instructions`` replace the schema's text when
           the caller words the format itself);
        3. either way the reply is read (``read``: text -> value, ValueError when unreadable;
           default: the last JSON object fitting the schema), and one repair call follows a reply
           that cannot be read (``repair=False`` for callers reproducing a tool that makes none).

        Raises :class:`StructuredOutputError` (with the raw text and the calls made) when no
        reply can be read.
        """
        from .structured import parse_json_answer, repair_message, response_format_for, schema_instructions

        reader = read or (lambda text: parse_json_answer(text, schema))
        in_prompt = _append_to_last_user(messages, instructions or schema_instructions(schema))
        first = None
        mode = "prompt"
        if self.supports_schema(model):
            sent, schema_params = self.json_request(model, messages, schema, params=params, schema_name=schema_name,
                                                    instructions=instructions)
            try:
                first = await self.complete(model, sent, params=schema_params, sample=sample, template=template,
                                            no_cache=no_cache)
                mode = "schema"
            except ModelCallError as exc:
                if exc.status != 400:
                    raise
                mode = "prompt (the provider refused the schema)"
        if first is None:
            sent = in_prompt
            first = await self.complete(model, sent, params=params, sample=sample, template=template,
                                        no_cache=no_cache)
        try:
            return StructuredAnswer(reader(first.text), first.text, [first], mode)
        except ValueError as exc:
            problem = str(exc)
            if not repair:
                raise StructuredOutputError(f"unreadable JSON answer: {exc}", raw=first.text, model=model,
                                            attempts=1, completions=[first]) from None
        again = sent + [{"role": "assistant", "content": first.text},
                        {"role": "user", "content": repair_message(problem, schema)}]
        second_params = dict(params or {})
        if mode == "schema":
            second_params["response_format"] = response_format_for(schema, schema_name)
        try:
            second = await self.complete(model, again, params=second_params, sample=sample, template=template,
                                         no_cache=no_cache)
        except ModelCallError as exc:
            raise StructuredOutputError(f"unreadable JSON answer, and the repair call failed: {exc}",
                                        raw=first.text, model=model, attempts=2, completions=[first]) from None
        try:
            value = reader(second.text)
        except ValueError as exc:
            raise StructuredOutputError(f"unreadable JSON answer after one repair call: {exc}", raw=second.text,
                                        model=model, attempts=2, completions=[first, second]) from None
        return StructuredAnswer(value, second.text, [first, second], mode, repaired=True)

    # -- sync wrappers ------------------------------------------------------------
    def complete_sync(self, model: str, messages: list[dict[str, Any]], **options: Any) -> Completion:
        """:meth:`complete` from sync code, also inside a running event loop."""
        return self._background.run(self.complete(model, messages, **options))

    def complete_json_sync(self, model: str, messages: list[dict[str, Any]], schema: dict[str, Any],
                           **options: Any) -> StructuredAnswer:
        return self._background.run(self.complete_json(model, messages, schema, **options))

    def run_sync(self, coroutine: Any) -> Any:
        """Run any coroutine that uses this layer on its background loop."""
        return self._background.run(coroutine)

    def close(self) -> None:
        """Nothing to release yet: the background loop is shared by the process (see background.py)."""


@dataclass
class _InFlight:
    """A model call in flight and how many requests wait for it."""

    task: "asyncio.Task[Any]"
    waiters: int = 0


def _tool_calls(message: Any) -> list[dict[str, Any]] | None:
    """The message's tool calls as plain OpenAI-shaped dicts (what the cache can keep), or None."""
    calls = getattr(message, "tool_calls", None) or []
    out = []
    for call in calls:
        data = call.model_dump() if hasattr(call, "model_dump") else dict(call)
        function = data.get("function") or {}
        out.append({"id": data.get("id"), "type": data.get("type") or "function",
                    "function": {"name": function.get("name"), "arguments": function.get("arguments") or "{}"}})
    return out or None


def _cached_tokens(usage: Any) -> int | None:
    """Prompt tokens served from the provider's prompt cache: OpenAI's ``prompt_tokens_details.
    cached_tokens`` or Anthropic's ``cache_read_input_tokens``; None when the reply does not say."""
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    if cached is None:
        cached = getattr(usage, "cache_read_input_tokens", None)
    return cached if isinstance(cached, int) else None


def _append_to_last_user(messages: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    out = [dict(m) for m in messages]
    for message in reversed(out):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            message["content"] = message["content"].rstrip() + "\n\n" + text
            return out
        if message.get("role") == "user" and isinstance(message.get("content"), list):  # a judge shown media
            message["content"] = [*message["content"], {"type": "text", "text": text}]
            return out
    out.append({"role": "user", "content": text})
    return out


def _describe(exc: BaseException) -> str:
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) and not str(exc):
        return "TimeoutError: no answer within the call's timeout"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    # litellm repeats the class name inside the message ("litellm.RateLimitError: ...").
    prefix = f"litellm.{type(exc).__name__}: "
    while text.startswith(prefix):
        text = text[len(prefix):]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _epoch() -> int:
    trial = current_trial()
    return 0 if trial is None else trial.epoch
