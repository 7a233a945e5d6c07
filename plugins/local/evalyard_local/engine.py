"""Loaded models: one llama.cpp server (xllamacpp) per model per process, fed by a queue.

Each model has its own thread pool with as many workers as the server has slots
(``n_parallel``, default 1: see benchmarks/RESULTS.md, "Local judge", for what a second slot
gives on two cores). Requests wait in the engine's queue, so the event loop never blocks, and a
request whose caller gave up (timeout, cancelled run) before it started is dropped instead of
being computed for nobody. A slot that frees takes the waiting request whose prompt shares the
longest start with the slot's last one (``PrefixQueue``), so a judge with two templates gets
long runs of one template and its cached prefix. CPU threads are chosen when the model loads,
for the load the machine has then (``threads_for_load``), unless a setting names them. The model is loaded by the first request, in the worker, so loading
never blocks the event loop either.

Prefix reuse. Each slot keeps the KV cache of its last prompt, and a request that starts with
the same tokens (a judge template's static part) evaluates only the rest (llama.cpp's
``cache_prompt``, which the provider turns on). That is exact only with kernels whose result
for one token does not depend on which other tokens share its batch, and two of llama.cpp's
CPU defaults are not: flash attention (its batched path) and the repacked Q4_K weights (groups
of four tokens go through one kernel, the leftover tokens of a batch through another). The
engine therefore loads every model with both off: a call that reuses a cached prefix then
gives bit-identical logprobs to a cold call, whatever ran before it (tests/plugins/local/
test_local_prefix_reuse.py). Two more paths differ, both where a slot's cache holds tokens that
llama.cpp computed one at a time rather than in a prompt's batch: a prompt the slot already
holds whole (answered from its last token alone), and a later turn of the slot's last
conversation (a repair: its prompt goes on with the answer the slot generated). The engine
picks each request's slot itself and sends both cold (the response cache answers most repeats
before they get here), and keeps no prompts parked in host memory. With more than one slot,
requests running at once share llama.cpp's batches and exactness is lost (llama.cpp's kernels
round a shared batch differently): one slot is the default. The price is measured in
benchmarks/RESULTS.md.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

log = logging.getLogger("evalyard.local")

DEFAULT_N_CTX = 4096


def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def threads_for_load(cores: int | None = None, load: float | None = None) -> int:
    """CPU threads for a model loaded now: the cores other work leaves idle (the one-minute load
    average), at least one. llama.cpp's threads spin on each other at every layer, so a thread
    that waits for a busy core stalls the rest: on a loaded machine, every core made calls
    slower than one thread (benchmarks/RESULTS.md, "Local judge")."""
    cores = available_cores() if cores is None else cores
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):  # no load average here: take the machine as idle
            load = 0.0
    return max(1, min(cores, int(cores - load + 0.5)))


@dataclass(frozen=True)
class LoadSettings:
    """How a model is loaded: context size per request, CPU threads, parallel slots."""

    n_ctx: int = DEFAULT_N_CTX
    #: None: chosen when the model loads, for the load it meets (``threads_for_load``)
    n_threads: int | None = None
    n_parallel: int = 1

    @classmethod
    def resolve(cls, n_ctx: Any = None, n_threads: Any = None, n_parallel: Any = None, *,
                defaults: dict[str, Any] | None = None) -> "LoadSettings":
        """Call options first, then the application's settings ``defaults`` (``n_ctx``,
        ``threads``, ``parallel``: ``EVALYARD_LOCAL_N_CTX`` / ``_THREADS`` / ``_PARALLEL``), then
        4096 tokens, threads for the machine's load when the model loads, 1 slot."""
        values = {}
        defaults = defaults or {}
        for key, given, setting, default in (("n_ctx", n_ctx, "n_ctx", DEFAULT_N_CTX),
                                              ("n_threads", n_threads, "threads", None),
                                              ("n_parallel", n_parallel, "parallel", 1)):
            label = f"local model option {key}"
            if given is None and defaults.get(setting) is not None:
                given, label = defaults[setting], f"setting local.{setting}"
            if given is not None:
                if isinstance(given, bool) or not isinstance(given, int) or given < 1:
                    from .files import ModelFileError

                    raise ModelFileError(f"{label}={given!r}: expected a whole number >= 1")
                values[key] = given
            else:
                values[key] = default
        return cls(**values)


def continues(messages: Any, last: Any) -> bool:
    """Whether ``messages`` are ``last`` or start with them (a later turn of the same conversation)."""
    if not isinstance(messages, list) or not isinstance(last, list) or not last:
        return False
    return messages[:len(last)] == last


class LoadedModel:
    """One model file behind one xllamacpp server, with its request queue."""

    def __init__(self, name: str, locate: Callable[[], Path], settings: LoadSettings) -> None:
        self.name = name
        self.settings = settings
        self._locate = locate
        self._server: Any = None
        self.path: Path | None = None
        self._load_lock = threading.Lock()
        self._stats_lock = threading.Lock()
        #: Requests answered and the seconds spent inside llama.cpp on them (what a caller's
        #: latency beyond that costs is litellm's and the model layer's share).
        self.calls = 0
        self.busy_s = 0.0
        #: Prompt tokens sent, and how many of them a slot's KV cache served (prefix reuse).
        self.prompt_tokens = 0
        self.cached_tokens = 0
        #: Requests inside llama.cpp right now, and the most there have been at once.
        self.in_flight = 0
        self.peak_in_flight = 0
        #: CPU threads llama.cpp was loaded with (settings', else chosen for the load at loading)
        self.threads: int | None = settings.n_threads
        # Each request runs on a slot of the engine's choosing, so the engine knows what each slot
        # holds; a slot that frees takes the waiting request that shares the longest start with its
        # last prompt (PrefixQueue). One pool task per request: the pool keeps its shutdown rules.
        self._free_slots: queue.SimpleQueue[int] = queue.SimpleQueue()
        for slot in range(settings.n_parallel):
            self._free_slots.put(slot)
        self._last_prompt: dict[int, Any] = {}
        self._waiting = PrefixQueue()
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=settings.n_parallel,
                                                          thread_name_prefix=f"evalyard-local-{name[:20]}")

    def server(self) -> Any:
        with self._load_lock:
            if self._server is None:
                path = self._locate()
                import xllamacpp

                params = xllamacpp.CommonParams()
                params.model.path = str(path)
                # llama.cpp splits the context between slots: give each slot the full size.
                params.n_ctx = self.settings.n_ctx * self.settings.n_parallel
                params.n_parallel = self.settings.n_parallel
                self.threads = self.settings.n_threads or threads_for_load()
                params.cpuparams.n_threads = self.threads
                params.cpuparams_batch.n_threads = self.threads
                params.verbosity = -1  # llama.cpp's own log lines would flood every run's output
                # Batch-invariant kernels, so that prefix reuse is exact (see the module's doc).
                params.flash_attn_type = 0
                params.no_extra_bufts = True
                # No parked prompts in host memory: a prompt found there whole would be answered
                # from its last token alone (see chat).
                params.cache_ram_mib = 0
                log.debug("loading %s from %s (%s, %d threads)", self.name, path, self.settings, self.threads)
                self._server = xllamacpp.Server(params)
                self.path = path
            return self._server

    def chat(self, request: dict[str, Any], slot: int = 0) -> dict[str, Any]:
        """One chat completion on ``slot``, blocking (called by the slot's worker thread)."""
        server = self.server()
        request = {**request, "id_slot": slot}
        if request.get("cache_prompt", True) and continues(request.get("messages"), self._last_prompt.get(slot)):
            # The slot holds this very prompt, or the new one goes on from it (a follow-up turn after
            # the slot's own answer): llama.cpp would reuse the slot's last token or the tokens it
            # generated, computed one at a time through kernels that round differently from a
            # batch's. A cold call keeps the answer exact.
            request["cache_prompt"] = False
        self._last_prompt[slot] = request.get("messages")
        with self._stats_lock:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        started = time.perf_counter()
        result: dict[str, Any] = {}
        try:
            result = server.handle_chat_completions(request)
            return result
        finally:
            usage = result.get("usage") or {}
            with self._stats_lock:
                self.in_flight -= 1
                self.calls += 1
                self.busy_s += time.perf_counter() - started
                self.prompt_tokens += usage.get("prompt_tokens") or 0
                self.cached_tokens += (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0

    def submit(self, request: dict[str, Any]) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._waiting.put(request, future)
        self.pool.submit(self._serve_one)
        return future

    def _serve_one(self) -> None:
        """A pool task: on a free slot, answer the waiting request that suits the slot best."""
        slot = self._free_slots.get()
        try:
            request, future = self._waiting.take(self._last_prompt.get(slot))
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(self.chat(request, slot))
            except BaseException as exc:  # noqa: BLE001 - the caller's future carries it
                future.set_exception(exc)
        finally:
            self._free_slots.put(slot)

    def close(self) -> None:
        """Stop taking requests; the server is freed once the queued ones are done."""
        self.pool.shutdown(wait=False)


def prompt_text(messages: Any) -> str:
    """A prompt's text in order (what a slot's KV cache is keyed on, near enough for choosing)."""
    if not isinstance(messages, list):
        return ""
    return "\x00".join(m.get("content") if isinstance(m.get("content"), str) else repr(m.get("content"))
                        for m in messages if isinstance(m, dict))


def shared_start(a: str, b: str) -> int:
    """Length of the longest common start of ``a`` and ``b``."""
    n = min(len(a), len(b))
    low, high = 0, n  # binary search on slices: C-speed comparisons, not a Python loop per character
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


class PrefixQueue:
    """Requests waiting for a slot. A free slot takes the waiting request whose prompt shares the
    longest start with the slot's last one, so requests of one template follow each other and reuse
    the slot's cached prefix (a judge that alternates two templates would otherwise send a cold
    prompt at every switch). Arrival order breaks ties, and a request passed over ``MAX_SKIPS``
    times goes next, so none waits for ever. The pool runs one task per request put, so ``take``
    always finds one."""

    MAX_SKIPS = 8

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[list[Any]] = []  # [skips, text, request, future], oldest first

    def put(self, request: dict[str, Any], future: concurrent.futures.Future) -> None:
        with self._lock:
            self._items.append([0, prompt_text(request.get("messages")), request, future])

    def take(self, last_messages: Any) -> tuple[dict[str, Any], concurrent.futures.Future]:
        with self._lock:
            starved = next((i for i, item in enumerate(self._items) if item[0] >= self.MAX_SKIPS), None)
            if starved is not None:
                chosen = starved
            else:
                last = prompt_text(last_messages)
                shared = [shared_start(item[1], last) for item in self._items]
                chosen = max(range(len(shared)), key=lambda i: (shared[i], -i))
            for item in self._items[:chosen]:
                item[0] += 1
            _, _, request, future = self._items.pop(chosen)
            return request, future


class Engine:
    """The process's loaded models, one per model string."""

    def __init__(self) -> None:
        self._models: dict[str, LoadedModel] = {}
        self._lock = threading.Lock()

    def get(self, name: str, locate: Callable[[], Path], settings: LoadSettings) -> LoadedModel:
        # Located on every call, loaded or not: the file must still be installed where the settings
        # say and still match its pinned hash (the check is remembered while the file is unchanged).
        path = locate()
        with self._lock:
            loaded = self._models.get(name)
            if loaded is not None and loaded.settings == settings and loaded.path in (None, path):
                return loaded
            if loaded is not None:
                # One instance per model: a call with other load settings replaces it.
                log.warning("reloading local model %s with %s (was %s)", name, settings, loaded.settings)
                loaded.close()
            loaded = self._models[name] = LoadedModel(name, lambda: path, settings)
            return loaded

    def loaded(self) -> dict[str, LoadedModel]:
        with self._lock:
            return dict(self._models)

    def unload(self, name: str) -> None:
        with self._lock:
            loaded = self._models.pop(name, None)
        if loaded is not None:
            loaded.close()
