"""``rag/pipeline``: the user's own retrieval pipeline is the system under test.

Per case it calls the user's retriever with the query (the case's ``input``) and, when one is
given, the answer function with the query and the passages retrieved; or it POSTs the case to
the pipeline's HTTP endpoint. The ranked passages become the case's ``retrieved`` for scoring
(retrieval scorers score what this run retrieved, not what the data recorded), the answer its
candidate, and each stage's latency is kept in the output's details.

- ``retriever=module:function`` or ``retriever=path/to/file.py:function`` (relative to the working
  directory): ``retriever(query, **params)`` returns a list of passages, each ``{"id", "text",
  "score"}`` (``text`` and ``score`` optional) or a plain text (its position is its id), checked
  as a case's ``retrieved`` is.
- ``answer=...:function`` (optional: a retrieval-only pipeline makes no answer):
  ``answer(query, passages, **params)`` returns the answer's text; ``passages`` are the checked
  ``{id, text, score}`` dicts in the order the retriever gave them.
- ``url=http://...``: the whole pipeline behind an endpoint. The body is ``{"id", "input",
  "params"}`` as JSON; the reply ``{"retrieved": [...], "answer": "..."}`` (``answer`` optional).

Any other config key is a parameter of the pipeline (``top_k=5``, ``index=bm25``): each function
gets, as keyword arguments, the parameters its signature names (all of them if it takes
``**kwargs``); a parameter no function takes is refused before anything runs, so a misspelt one
never goes unnoticed. Values written as text (``-g rag/pipeline:...,top_k=5``) are read as
``--param`` reads them: a whole number, else a number, else the text. Sync and async functions
both work; a sync one runs in a worker thread, so cases run concurrently (``--concurrency``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import inspect
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from evalyard import Case, ConfigError, Generation, Generator, InputError, check_retrieved, import_file

if TYPE_CHECKING:
    from evalyard import Runtime

#: The namespace the generator registers under besides the plugin's own: ``rag/pipeline``.
NAMESPACE = "rag"


def load_callable(option: str, target: str) -> Callable[..., Any]:
    """``module:function`` or ``path/to/file.py:function`` -> the function; a ConfigError naming
    the option when it cannot be imported, has no such attribute or is not callable."""
    module, _, attribute = str(target).rpartition(":")
    if not module or not attribute:
        raise ConfigError(f"generator rag/pipeline: {option}={target!r}: expected 'module:function' or "
                          "'path/to/file.py:function'")
    try:
        loaded = import_file(module) if module.endswith(".py") else importlib.import_module(module)
        found = getattr(loaded, attribute)
    except (ImportError, AttributeError, OSError) as exc:
        raise ConfigError(f"generator rag/pipeline: {option}={target!r}: cannot load it "
                          f"({type(exc).__name__}: {exc})") from None
    except Exception as exc:  # the user's module raised while it was imported
        raise ConfigError(f"generator rag/pipeline: {option}={target!r}: importing it raised "
                          f"{type(exc).__name__}: {exc}") from None
    if not callable(found):
        raise ConfigError(f"generator rag/pipeline: {option}={target!r} is not callable")
    return found


def _value(value: Any) -> Any:
    """A parameter written as text, read as ``--param`` reads it: int, else float, else the text."""
    if not isinstance(value, str):
        return value
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


class _Stage:
    """One of the user's functions and the parameters its signature takes."""

    def __init__(self, option: str, target: str) -> None:
        self.option, self.target = option, target
        self.function = load_callable(option, target)
        self.is_async = inspect.iscoroutinefunction(self.function) or inspect.iscoroutinefunction(
            getattr(self.function, "__call__", None))
        try:
            parameters = inspect.signature(self.function).parameters.values()
        except (TypeError, ValueError):  # no signature to read (a builtin): it is given every parameter
            self.takes_all, self.names = True, set()
        else:
            self.takes_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
            self.names = {p.name for p in parameters
                          if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)}

    def takes(self, name: str) -> bool:
        return self.takes_all or name in self.names

    async def call(self, *args: Any, params: dict[str, Any]) -> tuple[Any, float]:
        """The function's result and how long it took, in milliseconds."""
        mine = {k: v for k, v in params.items() if self.takes(k)}
        started = time.perf_counter()
        if self.is_async:
            result = await self.function(*args, **mine)
        else:
            result = await asyncio.to_thread(self.function, *args, **mine)
        return result, round((time.perf_counter() - started) * 1000, 3)


class PipelineGenerator(Generator):
    name = "pipeline"
    description = ("the user's own RAG pipeline under test: calls retriever= (and answer=) functions, or POSTs to "
                   "url=; the passages it retrieved are the case's retrieved for scoring, its answer the candidate")
    requires = ("input",)
    # the retrieved passages' texts are the case's context for the judges of the answer (a case
    # without a context of its own may be judged for faithfulness on what this run retrieved)
    fills = ("candidate", "retrieved", "context")

    @dataclass
    class Config:
        retriever: str = field(default="", metadata={
            "help": "'module:function' or 'file.py:function': retriever(query, **params) -> passages"})
        answer: str = field(default="", metadata={
            "help": "'module:function' or 'file.py:function': answer(query, passages, **params) -> text (optional)"})
        url: str = field(default="", metadata={
            "help": "the pipeline's HTTP endpoint instead: POST {id, input, params}, reply {retrieved, answer}"})
        timeout: float = field(default=60.0, metadata={"help": "seconds an HTTP request may take"})
        params: dict[str, Any] = field(default_factory=dict, metadata={
            "help": "keyword arguments for the functions (any other config key is one too: top_k=5)"})

    @classmethod
    def make_config(cls, values: dict[str, Any] | None = None) -> Any:
        """The known keys build the Config; every other key is a parameter of the pipeline."""
        values = dict(values or {})
        known = {f.name for f in dataclasses.fields(cls.Config)}
        params = values.pop("params", None) or {}
        if not isinstance(params, dict):
            raise ConfigError(f"generator rag/pipeline: params: expected a mapping, got {params!r}")
        params = {**params, **{k: values.pop(k) for k in list(values) if k not in known}}
        config = super().make_config(values)
        config.params = {str(k): _value(v) for k, v in params.items()}
        return config

    def __init__(self, config: Any = None, **options: Any) -> None:
        super().__init__(config, **options)
        if not self.config.answer and not self.config.url:
            self.fills = ("retrieved", "context")  # no answer is made: a scorer of the answer needs the data's candidate

    def setup(self, runtime: Runtime) -> None:
        config = self.config
        if bool(config.retriever) == bool(config.url):
            raise ConfigError("generator rag/pipeline needs either retriever=module:function (with an optional "
                              "answer=module:function) or url=http://... (the whole pipeline), not "
                              + ("both" if config.url else "neither"))
        if config.url and config.answer:
            raise ConfigError("generator rag/pipeline: url= is the whole pipeline; answer= goes with retriever=")
        if config.url and not config.url.startswith(("http://", "https://")):
            raise ConfigError(f"generator rag/pipeline: url={config.url!r}: expected an http:// or https:// URL")
        if config.timeout <= 0:
            raise ConfigError("generator rag/pipeline: timeout must be more than 0 seconds")
        self.retriever = _Stage("retriever", config.retriever) if config.retriever else None
        self.answerer = _Stage("answer", config.answer) if config.answer else None
        if self.retriever is not None:
            stages = [s for s in (self.retriever, self.answerer) if s is not None]
            unused = [k for k in config.params if not any(s.takes(k) for s in stages)]
            if unused:
                names = " nor ".join(f"{s.option} {s.target}" for s in stages)
                raise ConfigError(f"generator rag/pipeline: parameter {unused[0]!r} is taken by neither {names}"
                                  if len(stages) > 1 else
                                  f"generator rag/pipeline: parameter {unused[0]!r} is not taken by {names}")

    async def agenerate(self, case: Case) -> Generation:
        if self.config.url:
            return await self._over_http(case)
        params = self.config.params
        found, retrieval_ms = await self.retriever.call(case.input, params=params)
        passages = _checked(found, "the retriever")
        details: dict[str, Any] = {"retriever": self.config.retriever, "passages": len(passages),
                                   "retrieval_ms": retrieval_ms}
        text, answer_ms = "", None
        if self.answerer is not None:
            text, answer_ms = await self.answerer.call(case.input, [dict(p) for p in passages], params=params)
            if not isinstance(text, str):
                raise ValueError(f"the answer function returned {type(text).__name__}, not text")
            details["answer"] = self.config.answer
        details.update(answer_ms=answer_ms, latency_ms=round(retrieval_ms + (answer_ms or 0.0), 3))
        if params:
            details["params"] = params
        return Generation(text=text, retrieved=passages, details=details)

    async def _over_http(self, case: Case) -> Generation:
        body = json.dumps({"id": case.id, "input": case.input, "params": self.config.params}).encode()
        started = time.perf_counter()
        reply = await asyncio.to_thread(_post, self.config.url, body, self.config.timeout)
        latency_ms = round((time.perf_counter() - started) * 1000, 3)
        if not isinstance(reply, dict) or "retrieved" not in reply:
            raise ValueError(f"{self.config.url} replied {_short(reply)}; expected {{\"retrieved\": [...], "
                             "\"answer\": \"...\"}")
        passages = _checked(reply["retrieved"], self.config.url)
        answer = reply.get("answer")
        if answer is not None and not isinstance(answer, str):
            raise ValueError(f"{self.config.url} replied an answer that is {type(answer).__name__}, not text")
        details = {"url": self.config.url, "passages": len(passages), "latency_ms": latency_ms,
                   # the endpoint's own split of its time, when it reports one
                   "retrieval_ms": reply.get("retrieval_ms"), "answer_ms": reply.get("answer_ms")}
        if self.config.params:
            details["params"] = self.config.params
        return Generation(text=answer or "", retrieved=passages, details=details)


def _checked(found: Any, who: str) -> list[dict[str, Any]]:
    """The passages as a case's ``retrieved`` holds them, or this case's error saying what is wrong."""
    try:
        return check_retrieved(found, None, None)
    except InputError as exc:
        where = f" at {exc.field}" if exc.field and exc.field != "retrieved" else ""
        raise ValueError(f"{who} returned a bad ranking{where}: {exc}") from None


def _post(url: str, body: bytes, timeout: float) -> Any:
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        raise RuntimeError(f"{url} answered HTTP {exc.code}: {_short(exc.read().decode('utf-8', 'replace'))}") \
            from None
    try:
        return json.loads(raw)
    except ValueError:
        raise ValueError(f"{url} replied with no JSON: {_short(raw.decode('utf-8', 'replace'))}") from None


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:117] + "..."
