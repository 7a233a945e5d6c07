"""Know the cost before the run: the forecast ``evalyard run SUITE --plan`` prints.

(A *plan* in the code is a resolved run, ``Application.plan`` -> ``RunPlan``; what a run would
cost is its *forecast*.) A forecast walks the work a run would do (every case x scorer, and every case the generator would
fill; on ``--resume`` only the pairs still missing) one case at a time, so a suite of millions is
never loaded whole, and asks each scorer and generator for the requests it would send
(``planned_requests``: rendered by the same code that sends them, cache key included). Nothing
is sent and nothing is written: the response cache and the history of earlier calls are read.

Each figure says how it was made, because they are not equally sure:

- **calls and cache hits** are exact for scorers and generators that render their requests (the
  cache answers a call only when its key matches, and the keys are the real ones); a scorer that
  cannot (its second call depends on the first answer) is estimated from its earlier results;
- **input tokens** of a cache hit are the recorded ones; otherwise the rendered messages are
  counted with the model's tokenizer through litellm (OpenAI models; any other model is counted
  with litellm's default tokenizer and labelled an estimate), scaled by how the provider's
  recorded counts compared with that count on earlier calls of the same model when there are any;
- **output tokens** are the bound a request sets (a P(yes) judge's one token), else the mean of
  earlier calls of the same model with the same parameters, else a guess from the answer's shape;
- **cost** is litellm's price map on those tokens (batch prices with ``--batch``), or the mean
  recorded cost per call of the model; ``None`` (printed ``unknown``) when neither exists;
- **time** is the model's recorded latencies over the concurrency it will get; a local model
  without history is timed on one of the plan's own requests, sent to the engine directly (not
  through the cache); scorers that call no model are timed on a sample of the suite's cases.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

from .models.trial import trial

if TYPE_CHECKING:
    from .models.layer import ModelLayer
    from .store import Store

#: Requests per model counted token by token; past it, tokens are estimated from the characters
#: of the rest at the counted requests' tokens per character (a plan of millions stays quick).
EXACT_TOKEN_REQUESTS = 20_000
#: Earlier calls of a model read from the response cache for its latency, output length and the
#: ratio of the provider's token counts to the tokenizer's.
HISTORY_CALLS = 200
#: Keys looked up in the response cache in one query.
LOOKUP_CHUNK = 500
#: Cases handled together: the generator's requests first, so that judges see cached answers.
WINDOW = 200
#: Cases a scorer that calls no model is timed on (after one warm-up batch), and the most
#: seconds spent timing it.
SAMPLE_CASES = 64
SAMPLE_SECONDS = 5.0
#: A run imports litellm in its first model call (inside that call's recorded latency too).
IMPORT = "importing litellm"
#: Recorded latencies above this many times the median are a process's first calls (the import,
#: connections made): start-up, not the model's pace.
OUTLIER = 4
#: Requests a local model without history answers for the plan (the first loads it).
PROBE_REQUESTS = 3
#: Earlier calls with the same parameters needed to prefer them over all the model's calls.
MIN_SIMILAR = 5
#: Distinct requests remembered to find a run's repeated requests.
SEEN_KEYS = 2_000_000
#: Output tokens assumed, without history, for an answer of each kind (labelled as estimates).
SHAPE_OUTPUT_TOKENS = {"logprobs": 1, "text": 3, "json": 20, "reasoning": 150, "generation": 256}


@dataclass
class ModelTally:
    """What one scorer (or the generator) asks one model."""

    calls: int = 0
    cache_hits: int = 0
    #: tokens of cache hits, as recorded
    hit_input: int = 0
    hit_output: int = 0
    #: tokens of calls to make: counted (exactly, up to EXACT_TOKEN_REQUESTS) and by characters past it
    counted_input: int = 0
    counted_requests: int = 0
    counted_chars: int = 0
    uncounted_chars: int = 0
    output: float = 0.0
    output_guessed: int = 0
    estimated_calls: int = 0
    #: calls repeating an earlier request of the same run (answered by the cache by then)
    repeats: int = 0
    repeat_input: int = 0
    #: images counted into ``counted_input`` by litellm's image tokens; media it cannot count
    media_counted: int = 0
    media_unknown: int = 0
    #: the parameters of its requests (one scorer's requests share them), to find similar calls
    signature: str | None = None
    output_bases: set = field(default_factory=set)


@dataclass
class Line:
    """One scorer's or the generator's share of the plan."""

    name: str
    kind: str  # "scorer" or "generator"
    pairs: int = 0
    models: dict[str, ModelTally] = field(default_factory=dict)
    #: cases whose requests the scorer could not render (estimated from history)
    unplanned: int = 0
    no_model: bool = False
    seconds: float | None = None
    notes: list[str] = field(default_factory=list)

    def tally(self, model: str) -> ModelTally:
        return self.models.setdefault(model, ModelTally())


class Forecaster:
    def __init__(self, plan: Any, store: Store, *, concurrency: int = 4, use_cache: bool = True,
                 batch: bool = False, resume_run: Any = None, executors: Any = None) -> None:
        self.plan = plan
        self.store = store
        self.concurrency = concurrency
        self.use_cache = use_cache and store is not None
        self.batch = batch
        self.resume_run = resume_run
        self.executors = executors
        self.layer = plan.runtime.models
        self.lines = {p.name: Line(p.name, "scorer") for p in plan.scorers}
        self.generation = Line(plan.generator.entry.qualified, "generator") if plan.generator else None
        self._history: dict[str, list[dict[str, Any]]] = {}
        self._counter = None
        self._pending: list[tuple[ModelTally, Any]] = []
        self.startup: list[tuple[str, float]] = []
        self.sample_cases: list[Any] = []
        self._answer_words: float | None = None
        self._seen: set[int] = set()
        #: sha256 -> what the cases of the pending requests say of their media (kind, size in pixels)
        self._media: dict[str, dict[str, Any]] = {}
        #: model -> what timing its requests on a local engine found (seconds, token ratio, cost)
        self._probes: dict[str, dict[str, Any]] = {}

    # -- the work ---------------------------------------------------------------
    def work(self) -> Iterator[tuple[Any, list[Any], bool]]:
        """(case, scorers still to run on it, whether it is to be generated), in suite order."""
        for case, scorers, generate in self._cases():
            if self.epochs == 1:
                yield case, scorers, generate
                continue
            for epoch in range(self.epochs):  # each epoch its own calls and cache keys (--epochs)
                yield dataclasses.replace(case, epoch=epoch), scorers, generate

    def _cases(self) -> Iterator[tuple[Any, list[Any], bool]]:
        generate = self.plan.generator is not None
        if self.resume_run is None:
            for case, _ in self.plan.suite.iter_cases():
                yield case, self.plan.scorers, generate and case.candidate is None
            return
        run = self.resume_run
        fresh = self.store.result_count(run.id) == 0
        for window in self.store.iter_run_cases(run.id, run.suite_id):
            done = set() if fresh else self.store.done_pairs(run.id, [c.id for c in window])
            for case in window:
                todo = [p for p in self.plan.scorers if (case.id, p.name) not in done]
                yield case, todo, generate and case.candidate is None

    @property
    def epochs(self) -> int:
        return int((self.plan.settings or {}).get("epochs") or 1)

    def walk(self) -> None:
        window: list[tuple[Any, list[Any], bool]] = []
        for item in self.work():
            window.append(item)
            if len(window) >= WINDOW:
                self._window(window)
                window = []
        if window:
            self._window(window)
        self._flush()

    def _window(self, window: list[tuple[Any, list[Any], bool]]) -> None:
        import dataclasses

        answers: dict[tuple[str, int | None], str | None] = {}
        for case, _, _ in window:  # the size of each image, which its request names by hash only
            if case.input_parts is not None or case.messages:
                self._media.update(media_of(case))
        if self.generation is not None:
            wanted = []
            for case, _, generate in window:
                if generate:
                    self.generation.pairs += 1
                    with trial(case.epoch):
                        requests = self.plan.generator.generator.planned_requests(case)
                    if requests is None:
                        self.generation.unplanned += 1
                        continue
                    wanted.append(((case.id, case.epoch), requests))
            keys = [r.key for _, requests in wanted for r in requests]
            found = self._lookup(keys)
            for trial_id, requests in wanted:
                for request in requests:
                    self._add(self.generation, request, found.get(request.key))
                record = found.get(requests[-1].key) if requests else None
                answers[trial_id] = (record["response"] or {}).get("text") if record else None
                if requests and self._answer_words is None:
                    self._answer_words = self._output_tokens(requests[-1])[0]
        for case, scorers, generate in window:
            placeholder = False
            if generate:
                text = answers.get((case.id, case.epoch))
                placeholder = text is None
                case = dataclasses.replace(case, candidate=text if text is not None else self._placeholder())
            if not placeholder and case.candidate is not None and len(self.sample_cases) < SAMPLE_CASES + 2:
                self.sample_cases.append(case)
            for p in scorers:
                line = self.lines[p.name]
                line.pairs += 1
                with trial(case.epoch):
                    requests = p.scorer.planned_requests(case)
                if requests is None:
                    if p.executor == "async":
                        line.unplanned += 1
                    else:
                        line.no_model = True
                    continue
                for request in requests:
                    if placeholder:  # the candidate is not generated yet: its key cannot be known
                        tally = line.tally(request.model)
                        tally.estimated_calls += 1
                        self._pending.append((tally, request))
                    else:
                        self._pending.append((line.tally(request.model), request))
            if len(self._pending) >= LOOKUP_CHUNK:
                self._flush()

    def _placeholder(self) -> str:
        """Stands in for a candidate not generated yet: as many words as its answer is expected to
        hold (a word is about a token for the tokenizers here)."""
        words = self._answer_words if self._answer_words is not None else SHAPE_OUTPUT_TOKENS["generation"]
        return " ".join(["word"] * max(1, int(round(words))))

    def _flush(self) -> None:
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        found = self._lookup([r.key for tally, r in pending if tally is not None])
        for tally, request in pending:
            self._count(tally, request, found.get(request.key))
        self._media.clear()

    def _add(self, line: Line, request: Any, record: dict[str, Any] | None) -> None:
        self._count(line.tally(request.model), request, record)

    def _count(self, tally: ModelTally, request: Any, record: dict[str, Any] | None) -> None:
        tally.calls += 1
        if record is not None and self.use_cache:
            usage = record.get("usage") or {}
            tally.cache_hits += 1
            tally.hit_input += usage.get("prompt_tokens") or 0
            tally.hit_output += usage.get("completion_tokens") or 0
            return
        chars = sum(len(_text(m.get("content"))) for m in request.messages)
        if tally.signature is None:
            tally.signature = _signature(request.params)
        if tally.counted_requests < EXACT_TOKEN_REQUESTS:
            tokens_in = self.count_tokens(request.model, request.messages) + self._media_tokens(tally, request)
            tally.counted_requests += 1
            tally.counted_chars += chars
        else:
            tokens_in = None
        tokens, basis = self._output_tokens(request)
        if self.use_cache and request.key and self._seen_before(request.key):
            # The same request earlier in this run: its answer is in the cache by the time this
            # one is asked (unless both are in flight at once), as the run's usage will count it.
            tally.cache_hits += 1
            tally.repeats += 1
            tally.repeat_input += tokens_in if tokens_in is not None else round(chars * 0.25)
            tally.hit_output += round(tokens)
            return
        if tokens_in is not None:
            tally.counted_input += tokens_in
        else:
            tally.uncounted_chars += chars
        tally.output += tokens
        tally.output_bases.add(basis)
        if basis.startswith("estimate"):
            tally.output_guessed += 1

    def _seen_before(self, key: str) -> bool:
        """Whether this run asks the same request earlier (64 bits of each key kept, up to
        SEEN_KEYS of them: memory stays bounded on a suite of millions)."""
        short = int(key[:16], 16)
        if short in self._seen:
            return True
        if len(self._seen) < SEEN_KEYS:
            self._seen.add(short)
        return False

    # -- the database -------------------------------------------------------------
    def _lookup(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """Cached answers by key (read only; a plan with --no-cache still reads none)."""
        if not self.use_cache or not keys:
            return {}
        from .store.queries import cached_calls

        return cached_calls(self.store, keys)

    def history(self, model: str) -> list[dict[str, Any]]:
        """The newest recorded calls of ``model`` (request, usage, latency)."""
        if model not in self._history:
            rows: list[dict[str, Any]] = []
            if self.store is not None:
                from .store.queries import recent_calls

                rows = recent_calls(self.store, model, HISTORY_CALLS)
            self._history[model] = rows
        return self._history[model]

    # -- tokens ---------------------------------------------------------------------
    def tokenizer(self, model: str) -> tuple[str | None, str]:
        """(the model name litellm counts with, or None for its default tokenizer; what it is).
        Only OpenAI models have their own tokenizer in litellm without a download: asking it for
        another model may fetch one from the Hugging Face hub, which a plan never does."""
        litellm = self.layer.litellm
        bare = model.split("/", 1)[1] if model.startswith(("openai/", "azure/")) else model
        info = litellm.model_cost.get(bare) or {}
        if info.get("litellm_provider") in ("openai", "azure", "text-completion-openai"):
            return bare, f"{bare}'s tokenizer (litellm)"
        return None, "estimate: litellm's default tokenizer (cl100k), not the model's"

    def count_tokens(self, model: str, messages: list[dict[str, Any]]) -> int:
        name, _ = self.tokenizer(model)
        litellm = self.layer.litellm
        plain = [{"role": m.get("role", "user"), "content": _text(m.get("content"))} for m in messages]
        return int(litellm.token_counter(model=name or "", messages=plain))

    def _media_tokens(self, tally: ModelTally, request: Any) -> int:
        """The input tokens of the request's images where litellm says how (OpenAI models: its image
        token rule, from the image's size and ``detail``); each other image or audio clip is
        counted in ``media_unknown`` and left out, never guessed."""
        from .media import REF

        tokens = 0
        for message in request.messages:
            content = message.get("content")
            for part in content if isinstance(content, list) else ():
                body = part.get("image_url") or part.get("input_audio") if isinstance(part, dict) else None
                ref = body.get("url") or body.get("data") if isinstance(body, dict) else None
                if not isinstance(ref, str) or not ref.startswith(REF):
                    continue
                info = self._media.get(ref[len(REF):]) or {}
                if part["type"] != "image_url" or not info.get("width") or self.tokenizer(request.model)[0] is None:
                    tally.media_unknown += 1
                    continue
                tokens += image_tokens(self.layer.litellm, info["width"], info["height"], body.get("detail") or "auto")
                tally.media_counted += 1
        return tokens

    def token_ratio(self, model: str, signature: str | None = None) -> tuple[float, str]:
        """How the provider's recorded prompt tokens compare with the tokenizer's count of the same
        recorded requests (chat template, schema, a provider counting its own way), over up to
        HISTORY_CALLS earlier calls with the same parameters (the same kind of request), else of
        the model; (1.0, "") without history. The text says what the ratio was measured on."""
        if signature is not None:
            ratio, n = self._ratio(model, signature)
            if n >= MIN_SIMILAR:
                return ratio, f"on {n} earlier calls like these"
        ratio, n = self._ratio(model, None)
        probe = self._probes.get(model) or {}
        if not n and probe.get("ratio"):
            return probe["ratio"], f"on the {probe['n']} requests timed for this plan"
        return ratio, f"on {n} earlier calls of the model" if n else ""

    def _ratio(self, model: str, signature: str | None) -> tuple[float, int]:
        recorded = counted = 0
        n = 0
        for call in self.history(model):
            tokens = (call["usage"] or {}).get("prompt_tokens")
            messages = (call["request"] or {}).get("messages")
            if not tokens or not messages:
                continue
            if signature is not None and _signature((call["request"] or {}).get("params") or {}) != signature:
                continue
            recorded += tokens
            counted += self.count_tokens(model, messages)
            n += 1
        return (recorded / counted, n) if n and counted else (1.0, 0)

    def _output_tokens(self, request: Any) -> tuple[float, str]:
        """Expected answer tokens of a request, and how that was found."""
        if request.output_tokens is not None:
            return float(request.output_tokens), "bounded by the request (max_tokens)"
        cache = self.__dict__.setdefault("_output_cache", {})
        signature = (request.model, _signature(request.params))
        if signature not in cache:
            history = self.history(request.model)
            same = [c["usage"].get("completion_tokens") for c in history
                    if _signature((c["request"] or {}).get("params") or {}) == signature[1]]
            same = [t for t in same if t is not None]
            if same:
                cache[signature] = (statistics.fmean(same), f"mean of {len(same)} earlier calls with these parameters")
            else:
                kind = request.answer.rsplit("/", 1)[-1]
                guess = SHAPE_OUTPUT_TOKENS.get(kind, SHAPE_OUTPUT_TOKENS["text"])
                bound = request.params.get("max_tokens")
                if bound:
                    guess = min(guess, bound)
                cache[signature] = (float(guess), f"estimate: a {request.answer} answer, no earlier calls")
        return cache[signature]

    # -- cost and time --------------------------------------------------------------
    def price(self, model: str, tokens_in: float, tokens_out: float, calls: int, batch: bool
              ) -> tuple[float | None, str]:
        """Cost of the calls to make, and its basis."""
        if calls == 0:
            return 0.0, "nothing to call"
        litellm = self.layer.litellm
        if batch:
            from .models.providers import batchable

            if batchable(model):
                try:
                    info = litellm.get_model_info(model=model)
                except Exception:
                    info = {}
                price_in, price_out = info.get("input_cost_per_token_batches"), info.get("output_cost_per_token_batches")
                if price_in is None or price_out is None:
                    return None, "no batch price in litellm's map"
                return tokens_in * price_in + tokens_out * price_out, "litellm's batch prices"
        try:
            cost_in, cost_out = litellm.cost_per_token(model=model, prompt_tokens=int(round(tokens_in)),
                                                       completion_tokens=int(round(tokens_out)))
            return float(cost_in + cost_out), "litellm's price map"
        except Exception:  # the model has no price in litellm's map
            pass
        costs = [c["usage"].get("cost") for c in self.history(model) if c["usage"].get("cost") is not None]
        if costs:
            return statistics.fmean(costs) * calls, f"estimate: mean recorded cost of {len(costs)} earlier calls"
        probe = self._probes.get(model) or {}
        if probe.get("cost") is not None:
            return probe["cost"] * calls, f"the provider's own price on the {probe['n']} requests timed for this plan"
        return None, "no price"

    def model_seconds(self, model: str, calls: int) -> tuple[float | None, str]:
        if calls == 0:
            return 0.0, "nothing to call"
        if self.batch:
            from .models.providers import batchable

            if batchable(model):
                return None, "batch jobs: within the provider's window (up to 24 h)"
        # requests in flight: the run's --concurrency, or fewer where the model's own limit says so
        concurrency = max(1, min(self.concurrency, self.layer.limit_for(model).maximum))
        latencies = [c["latency_ms"] for c in self.history(model) if c["latency_ms"]]
        if latencies:
            median = statistics.median(latencies)
            steady = [x for x in latencies if x <= OUTLIER * median]
            mean = statistics.fmean(steady) / 1000
            left_out = len(latencies) - len(steady)
            return calls * mean / concurrency, (
                f"{len(steady)} recorded latencies (mean {mean:.3f} s"
                + (f"; {left_out} first calls of a process left out, start-up counted apart" if left_out else "")
                + f") over {concurrency} in flight")
        measured = self._time_local(model)
        if measured is not None:
            return calls * measured / concurrency, (
                f"{PROBE_REQUESTS} of the plan's requests sent to the engine on this machine just now (the first "
                f"loads the model; the others took {measured:.2f} s on average) over {concurrency} in flight")
        return None, "no recorded latencies for this model"

    def _time_local(self, model: str) -> float | None:
        """A local model without history: time a few of the plan's own requests on the engine (the
        first loads the model: that is start-up; the mean of the others, which reuse the shared
        prompt prefix as a run's calls do, is the pace). Sent to the provider directly, never
        through the cache: the plan stores nothing. Their answers also give the engine's own
        token counts and price (``probe``)."""
        if model in self._probes:
            return self._probes[model]["seconds"]
        self._probes[model] = {"seconds": None}
        if self.layer.provider_of(model) is None or not model.startswith("local/"):
            return None
        requests = self._sample_requests(model, PROBE_REQUESTS)
        if len(requests) < 2:
            return None
        from .models.providers import cost_of
        from .runner import run_sync

        seconds, recorded, counted, costs = [], 0, 0, []
        for request in requests:
            started = time.perf_counter()
            try:
                response = run_sync(lambda r=request: self.layer.acompletion(
                    r.model, r.messages, **r.params, num_retries=0))
            except Exception:
                return None
            seconds.append(time.perf_counter() - started)
            recorded += getattr(getattr(response, "usage", None), "prompt_tokens", 0) or 0
            counted += self.count_tokens(model, request.messages)
            costs.append(cost_of(self.layer.litellm, response, model))
        pace = statistics.fmean(seconds[1:])  # the fastest alone was optimistic against a run's calls
        self.startup.append((f"loading {model}", max(0.0, seconds[0] - pace)))
        self._probes[model] = {"seconds": pace, "n": len(requests),
                               "ratio": recorded / counted if recorded and counted else None,
                               "cost": None if None in costs else statistics.fmean(costs)}
        return pace

    def _sample_requests(self, model: str, n: int) -> list[Any]:
        out: list[Any] = []
        for case in self.sample_cases:
            for p in self.plan.scorers:
                requests = p.scorer.planned_requests(case) or []
                out += [r for r in requests if r.model == model]
                if len(out) >= n:
                    return out[:n]
        return []

    def scorer_seconds(self, p: Any, pairs: int) -> tuple[float | None, str]:
        """A scorer that calls no model, timed on a sample of the suite's cases on its executor."""
        cases = [c for c in self.sample_cases if all(c.has(f) for f in p.scorer.required_fields())]
        if not cases or self.executors is None:
            return None, "no case to time it on"
        from .runner import run_sync

        executor = self.executors(p.executor)
        warm, timed = cases[:2], cases[2:] or cases[:2]
        started = time.perf_counter()
        run_sync(lambda: executor.score_batch(p.scorer, warm))
        warmup = time.perf_counter() - started
        done, started = 0, time.perf_counter()
        for start in range(0, len(timed), 8):
            run_sync(lambda chunk=timed[start:start + 8]: executor.score_batch(p.scorer, chunk))
            done += len(timed[start:start + 8])
            if time.perf_counter() - started > SAMPLE_SECONDS:
                break
        per_case = (time.perf_counter() - started) / max(1, done)
        workers = getattr(executor, "concurrency", 1) if p.executor == "process" else 1
        workers = max(1, min(workers, self.concurrency))
        self.startup.append((f"{p.name}'s first batch", max(0.0, warmup - per_case * len(warm))))
        return pairs * per_case / workers, (f"timed on {done} cases after a warm-up batch of {len(warm)} "
                                            f"({per_case * 1000:.1f} ms a case, {workers} at a time)")

    # -- the result -----------------------------------------------------------------------
    def estimate_unplanned(self, line: Line, p: Any) -> None:
        """A scorer that cannot render its calls: its earlier results' usage per case."""
        if not line.unplanned:
            return
        per = self._result_history(line.name, p)
        if per is None:
            line.notes.append(f"{line.unplanned} cases: this scorer cannot say its calls without making them, and "
                              "has no earlier results to estimate from: calls, tokens and cost unknown")
            return
        model = (per.get("models") or [None])[0] or "?"
        tally = line.tally(model)
        tally.estimated_calls += round(per["calls"] * line.unplanned)
        tally.calls += round(per["calls"] * line.unplanned)
        tally.counted_input += round(per["prompt_tokens"] * line.unplanned)
        tally.output += per["completion_tokens"] * line.unplanned
        tally.output_bases.add("estimate")
        tally.output_guessed += 1
        line.notes.append(f"estimate: this scorer's calls depend on its answers; per case as in its "
                          f"{per['n']} earlier results ({per['calls']:.2f} calls, {per['prompt_tokens']:.0f} "
                          f"tokens in, {per['completion_tokens']:.0f} out); cache hits not known")

    def _result_history(self, name: str, p: Any) -> dict[str, Any] | None:
        if self.store is None:
            return None
        from .store.queries import scorer_usages

        usages = scorer_usages(self.store, name, 1000)
        if not usages:
            return None
        n = len(usages)
        return {"n": n, "calls": sum(u.get("calls") or 0 for u in usages) / n,
                "prompt_tokens": sum(u.get("prompt_tokens") or 0 for u in usages) / n,
                "completion_tokens": sum(u.get("completion_tokens") or 0 for u in usages) / n,
                "models": sorted({m for u in usages for m in (u.get("models") or [])})}

    def report(self) -> dict[str, Any]:
        out_lines = []
        prepared = {p.name: p for p in self.plan.scorers}
        lines = ([self.generation] if self.generation is not None else []) + list(self.lines.values())
        for line in lines:
            if line.kind == "scorer":
                self.estimate_unplanned(line, prepared[line.name])
            elif line.unplanned:  # a conversation's calls depend on the answers (tool rounds, turns)
                line.notes.append(f"{line.unplanned} cases: this generator's calls depend on the model's answers, "
                                  "so they are not known before it runs: calls, tokens and cost unknown")
            out_lines.append(self._line(line, prepared.get(line.name)))
        totals = _totals(out_lines)
        startup = [(what, s) for what, s in self._startup_seconds()
                   if what != IMPORT or totals["calls"] > totals["cache_hits"]]  # the cache needs no litellm
        if totals["seconds"] is not None:  # litellm's import, a model's loading, a warm-up: all within the run
            totals["seconds"] += sum(s for _, s in startup)
        suite = self.resume_run.suite_name if self.resume_run is not None else self.plan.suite.name
        return {"suite": suite, "resume": self.resume_run.id if self.resume_run else None,
                "concurrency": self.concurrency, "batch": self.batch, "use_cache": self.use_cache,
                "lines": out_lines, "totals": totals,
                "startup": [{"what": what, "seconds": round(s, 3)} for what, s in startup]}

    def _startup_seconds(self) -> list[tuple[str, float]]:
        out = list(self.startup)
        imported = getattr(self.layer, "_evalyard_litellm_import_s", None)
        if imported:
            out.append((IMPORT, imported))
        return out

    def _line(self, line: Line, p: Any) -> dict[str, Any]:
        models = []
        for model, tally in line.models.items():
            fresh = tally.calls - tally.cache_hits
            seconds, time_basis = self.model_seconds(model, fresh)  # first: it may time a local model
            ratio, measured_on = self.token_ratio(model, tally.signature)
            _, tokenizer = self.tokenizer(model)
            per_char = tally.counted_input / tally.counted_chars if tally.counted_chars else 0.25
            fresh_in = (tally.counted_input + tally.uncounted_chars * per_char) * ratio
            cost, cost_basis = self.price(model, fresh_in, tally.output, fresh, False)
            batch_cost, batch_basis = self.price(model, fresh_in, tally.output, fresh, True)
            input_basis = tokenizer + (f", x{ratio:.3f} (the provider's counts over the tokenizer's {measured_on})"
                                       if measured_on else "")
            if tally.uncounted_chars:
                input_basis += f"; past {EXACT_TOKEN_REQUESTS} requests, by characters"
            if tally.hit_input:
                input_basis += "; cache hits as recorded"
            if tally.media_counted:
                input_basis += f"; {tally.media_counted} images by litellm's image token rule"
            if tally.media_unknown:
                input_basis += (f"; {tally.media_unknown} images or audio clips unknown (litellm counts images "
                                "for OpenAI models only), not included")
            calls_basis = "exact" if not tally.estimated_calls else (
                f"estimate: {tally.estimated_calls} calls depend on answers not known yet "
                "(a candidate still to generate, or a multi-step scorer)")
            if tally.repeats:
                calls_basis += (f"; {tally.repeats} repeat an earlier request of this run, counted as cache hits "
                                "(the first answer is cached by then)")
            models.append({
                "model": model, "calls": tally.calls, "cache_hits": tally.cache_hits,
                "calls_basis": calls_basis,
                "input_tokens": round(tally.hit_input + tally.repeat_input * ratio + fresh_in),
                "input_basis": input_basis, "media_tokens_unknown": tally.media_unknown,
                "output_tokens": round(tally.hit_output + tally.output),
                "output_basis": "; ".join(sorted(tally.output_bases)) or "cache hits as recorded",
                "cost": cost, "cost_basis": cost_basis, "batch_cost": batch_cost, "batch_cost_basis": batch_basis,
                "seconds": seconds, "time_basis": time_basis})
        seconds = None
        time_basis = ""
        unknown = bool(line.unplanned) and not models  # calls it cannot say, with nothing to estimate from
        if line.no_model and p is not None:
            seconds, time_basis = self.scorer_seconds(p, line.pairs)
        elif not models and not unknown:
            seconds, time_basis = 0.0, "no model calls"
        return {"name": line.name, "kind": line.kind, "pairs": line.pairs, "models": models, "unknown": unknown,
                "seconds": seconds, "time_basis": time_basis, "notes": line.notes}


def _totals(lines: list[dict[str, Any]]) -> dict[str, Any]:
    entries = [m for line in lines for m in line["models"]]
    total: dict[str, Any] = {
        "calls": sum(m["calls"] for m in entries), "cache_hits": sum(m["cache_hits"] for m in entries),
        "input_tokens": sum(m["input_tokens"] for m in entries),
        "output_tokens": sum(m["output_tokens"] for m in entries)}
    unknown = any(line["unknown"] for line in lines)
    for key in ("cost", "batch_cost"):
        known = [m[key] for m in entries if m[key] is not None]
        total[key] = sum(known) if known else (0.0 if not entries and not unknown else None)
        total[f"{key}_complete"] = all(m[key] is not None for m in entries) and not unknown
    times = [m["seconds"] for m in entries] + [line["seconds"] for line in lines if line["seconds"] is not None
                                                and not line["models"]]
    missing = any(m["seconds"] is None for m in entries) or any(
        line["seconds"] is None and not line["models"] for line in lines)
    total["seconds"] = None if missing else sum(times)
    return total


def media_of(case: Any) -> dict[str, dict[str, Any]]:
    """sha256 -> the case's record of that media (its kind, an image's width and height)."""
    from .media import parts_of

    return {part["media"]["sha256"]: part["media"] for _, part in parts_of(case)
            if (part.get("media") or {}).get("sha256")}


def image_tokens(litellm: Any, width: int, height: int, detail: str) -> int:
    """An image's input tokens as litellm counts them for OpenAI models (its ``calculate_img_tokens``:
    85 for ``low`` and ``auto``, 85 plus 170 a 512-pixel tile of the resized image for ``high``),
    from the size read at the door: the bytes are not needed."""
    from litellm.litellm_core_utils import token_counter as counting

    base = 85
    if detail != "high":
        return counting.calculate_img_tokens("", mode=detail, base_tokens=base)
    resized = counting.resize_image_high_res(width=width, height=height)
    return base + base * 2 * counting.calculate_tiles_needed(*resized)


def _signature(params: dict[str, Any]) -> str:
    from .models.keys import TRANSPORT_PARAMS

    return json.dumps({k: v for k, v in sorted(params.items()) if k not in TRANSPORT_PARAMS and v is not None},
                      sort_keys=True, default=str)


def _text(content: Any) -> str:
    """A message's text, whether a string or a list of parts (Anthropic's cache-marked system)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def forecast(plan: Any, store: Store, *, concurrency: int = 4, use_cache: bool = True, batch: bool = False,
             resume_run: Any = None, executors: Any = None) -> dict[str, Any]:
    """The plan's figures (see the module's doc): per scorer and generator, per model."""
    started = time.perf_counter()
    planner = Forecaster(plan, store, concurrency=concurrency, use_cache=use_cache, batch=batch,
                      resume_run=resume_run, executors=executors)
    _import_litellm(planner.layer)
    planner.walk()
    report = planner.report()
    report["planned_in_s"] = round(time.perf_counter() - started, 3)
    return report


def _import_litellm(layer: ModelLayer) -> None:
    """Import litellm (the tokenizer and the price map), timing it when this process had not yet:
    a run started afresh pays that too."""
    import sys

    if "litellm" not in sys.modules:
        started = time.perf_counter()
        layer.litellm
        layer._evalyard_litellm_import_s = time.perf_counter() - started
    else:
        layer.litellm
