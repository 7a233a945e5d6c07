"""Provider batch jobs for a run's model calls (``evalyard run --batch``).

In batch mode the model layer hands every call it cannot answer from the response cache to a
:class:`BatchQueue` instead of sending it. The queue gathers the calls the run makes while it
is busy, and once no new call has arrived for a moment (the run is waiting on all of them) it
sends them per model as one batch job (OpenAI's Files + Batches API, through litellm), polls the
job, and answers each waiting call from the job's output. Multi-step judges (claims, then one
check per claim) and structured-output repairs therefore proceed in rounds, one job per round.

Everything that must survive a killed driver is in the run's database: a job row is written
*before* the job is created at the provider (it names itself in the job's metadata), with one row
per call by its response-cache key. A resumed run that makes the same call again finds its key
in a job that is still pending and waits on that job instead of sending it again; a job created
just before the kill is found by its metadata. Answers go into the response cache under the same
key as an online call, so a rerun or a later online run reuses them. Calls a job failed (or
that expired with it) are sent again in a later job, up to the retry policy's attempts.

Cost is the provider's batch price from litellm's price map (``input_cost_per_token_batches``,
``output_cost_per_token_batches``); where the map has no batch price the cost is unknown,
never a guess. ``--max-cost`` is checked before a call joins a job; a job in flight can pass it.

The job ledger (``batch_jobs``, ``batch_requests``) is written here, not through ``store/``, for
the reason ``cache.py`` gives for its table: it belongs to the model layer, which runs with a bare
engine or none (then the ledger is in memory), and no other module reads it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from .errors import ModelCallError
from .records import CallRecord, CallUsage, Completion

if TYPE_CHECKING:
    from .layer import ModelLayer

log = logging.getLogger("evalyard.batch")

TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
#: Calls one job may hold (OpenAI's limit is 50,000 per job).
MAX_JOB_REQUESTS = 50_000


@dataclass
class _Waiting:
    """A call waiting for an answer: its request, and the futures of everyone who made it."""

    model: str
    messages: list[dict[str, Any]]
    params: dict[str, Any]
    inputs: dict[str, Any] | None = None  # the cache key's inputs, kept with the cached answer
    futures: list[asyncio.Future] = field(default_factory=list)


class BatchFailure(Exception):
    """One call failed inside a job (an error line, or the job expired before reaching it)."""


class BatchQueue:
    """Gathers a run's uncached calls into provider batch jobs; see the module's description.
    ``layer`` is the run's ModelLayer (its cache, usage and litellm), ``engine`` the run's database
    (None: jobs are kept in memory)."""

    def __init__(self, layer: ModelLayer, engine: Any, run_id: str | None = None, *,
                 idle_s: float = 0.25, poll_s: float = 30.0) -> None:
        self.layer = layer
        self.engine = engine
        self.run_id = run_id
        self.idle_s = idle_s
        self.poll_s = poll_s
        self._queued: dict[str, _Waiting] = {}  # key -> call not yet in a job
        self._in_jobs: dict[str, _Waiting] = {}  # key -> call in a job being watched
        self._watchers: dict[str, asyncio.Task] = {}  # job id -> task
        self._flusher: asyncio.Task | None = None
        self._last_arrival = 0.0
        self._memory_jobs: dict[str, dict[str, Any]] = {}  # without a database (Python API, tests)
        self.counts = {"jobs": 0, "submitted": 0, "done": 0, "failed": 0}

    # -- the call path -------------------------------------------------------------
    async def request(self, model: str, messages: list[dict[str, Any]], params: dict[str, Any], key: str,
                      inputs: dict[str, Any] | None = None) -> Completion:
        """Answer one call through a batch job (the cache was already asked)."""
        attempts = await asyncio.to_thread(self._failed_attempts, key)
        while True:
            pending_job = await asyncio.to_thread(self._pending_job_of, key)
            future = asyncio.get_running_loop().create_future()
            if pending_job is not None:  # sent before (a resumed run): wait on that job
                waiting = self._in_jobs.setdefault(key, _Waiting(model, messages, params, inputs))
                waiting.futures.append(future)
                self._watch(pending_job)
            elif key in self._in_jobs:
                self._in_jobs[key].futures.append(future)
            else:
                self.layer.usage.check()  # --max-cost: nothing new joins a job once it is reached
                waiting = self._queued.setdefault(key, _Waiting(model, messages, params, inputs))
                waiting.futures.append(future)
                self._last_arrival = time.monotonic()
                if self._flusher is None or self._flusher.done():
                    self._flusher = asyncio.create_task(self._flush_when_idle())
            try:
                completion = await future
            except BatchFailure as failure:
                attempts += 1
                if attempts >= self.layer.retry.max_attempts:
                    self.layer.usage.record_error()
                    raise ModelCallError(f"batch request failed {attempts} times; last: {failure}", model=model,
                                         attempts=attempts, retryable=True) from None
                continue
            self.layer.usage.record_attempts(attempts + 1, attempts)
            completion.attempts = attempts + 1
            return completion

    async def _flush_when_idle(self) -> None:
        """Send what is queued once the run has stopped adding calls for ``idle_s``."""
        while True:
            await asyncio.sleep(self.idle_s)
            if time.monotonic() - self._last_arrival >= self.idle_s:
                break
        queued, self._queued = self._queued, {}
        self._in_jobs.update(queued)  # from now on the same call joins these instead of a new job
        by_model: dict[str, list[tuple[str, _Waiting]]] = {}
        for key, waiting in queued.items():
            by_model.setdefault(waiting.model, []).append((key, waiting))
        for model, calls in by_model.items():
            for start in range(0, len(calls), MAX_JOB_REQUESTS):
                chunk = calls[start:start + MAX_JOB_REQUESTS]
                try:
                    job_id = await self._submit(model, chunk)
                except Exception as exc:  # the job could not be created: every call in it fails
                    failure = ModelCallError(f"could not create a batch job: {_describe(exc)}", model=model)
                    for key, waiting in chunk:
                        self._in_jobs.pop(key, None)
                        _settle(waiting.futures, failure)
                    continue
                self._watch(job_id)

    async def _submit(self, model: str, calls: list[tuple[str, _Waiting]]) -> str:
        provider, _, name = model.partition("/")
        lines = "".join(json.dumps({"custom_id": key, "method": "POST", "url": "/v1/chat/completions",
                                    "body": {"model": name, "messages": self.layer.inline_media(w.messages),
                                             **w.params}},
                                   ensure_ascii=False) + "\n" for key, w in calls)
        connection = self._connection(model)
        uploaded = await self.layer.litellm.acreate_file(file=(f"evalyard-{uuid.uuid4().hex[:8]}.jsonl",
                                                               lines.encode()), purpose="batch", **connection)
        job_id = uuid.uuid4().hex[:16]
        # Written before the provider has the job: a driver killed from here on finds it again.
        await asyncio.to_thread(self._record_job, job_id, model, uploaded.id, [key for key, _ in calls])
        batch = await self.layer.litellm.acreate_batch(
            completion_window="24h", endpoint="/v1/chat/completions", input_file_id=uploaded.id,
            metadata={"evalyard_job": job_id}, **connection)
        await asyncio.to_thread(self._update_job, job_id, provider_batch_id=batch.id, status="submitted")
        self.counts["jobs"] += 1
        self.counts["submitted"] += len(calls)
        log.info("batch %s: job %s submitted with %d requests (%s)", model, batch.id, len(calls), self._progress())
        return job_id

    def _watch(self, job_id: str) -> None:
        if job_id not in self._watchers or self._watchers[job_id].done():
            self._watchers[job_id] = asyncio.create_task(self._follow(job_id))

    async def _follow(self, job_id: str) -> None:
        """Poll one job until it ends, then answer (or fail) every call in it."""
        job = await asyncio.to_thread(self._job, job_id)
        model = job["model"]
        connection = self._connection(model)
        try:
            provider_id = job["provider_batch_id"] or await self._adopt_or_create(job, connection)
            poll_s = self.layer.settings_for(model).batch_poll_s or self.poll_s
            while True:
                batch = await self.layer.litellm.aretrieve_batch(provider_id, **connection)
                if batch.status in TERMINAL:
                    break
                await asyncio.sleep(poll_s)
            answered = await self._read_output(batch, model, connection, job_id)
        except Exception as exc:  # the provider or the connection failed us: the calls may be sent again
            failure = BatchFailure(f"batch job {job_id}: {_describe(exc)}")
            for key in await asyncio.to_thread(self._job_keys, job_id):
                waiting = self._in_jobs.pop(key, None)
                if waiting is not None:
                    _settle(waiting.futures, failure)
            await asyncio.to_thread(self._finish_job, job_id, "processed", {}, str(failure), {})
            return
        log.info("batch %s: job %s %s: %d answered, %d failed (%s)", model, provider_id, batch.status,
                 sum(1 for v in answered.values() if isinstance(v, Completion)),
                 sum(1 for v in answered.values() if not isinstance(v, Completion)), self._progress())

    async def _adopt_or_create(self, job: dict[str, Any], connection: dict[str, Any]) -> str:
        """A job recorded but never confirmed (the driver was killed around its creation): the
        provider's job naming it if there is one, else it is created now, once."""
        listed = await self.layer.litellm.alist_batches(limit=100, **connection)
        for batch in getattr(listed, "data", None) or []:
            if (getattr(batch, "metadata", None) or {}).get("evalyard_job") == job["id"]:
                provider_id = batch.id
                break
        else:
            batch = await self.layer.litellm.acreate_batch(
                completion_window="24h", endpoint="/v1/chat/completions", input_file_id=job["input_file_id"],
                metadata={"evalyard_job": job["id"]}, **connection)
            provider_id = batch.id
        await asyncio.to_thread(self._update_job, job["id"], provider_batch_id=provider_id, status="submitted")
        return provider_id

    async def _read_output(self, batch: Any, model: str, connection: dict[str, Any],
                           job_id: str) -> dict[str, Completion | BatchFailure]:
        outcome: dict[str, Completion | BatchFailure] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            content = await self.layer.litellm.afile_content(file_id=file_id, **connection)
            for line in content.content.decode("utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    outcome[row.get("custom_id")] = self._outcome(row, model)
        keys = await asyncio.to_thread(self._job_keys, job_id)
        for key in keys:  # a call the job never reached (expired, cancelled, failed as a whole)
            outcome.setdefault(key, BatchFailure(f"batch job {batch.id} ended '{batch.status}' without answering it"))
        answers = {k: v for k, v in outcome.items() if isinstance(v, Completion) and k in keys}
        for key, completion in answers.items():  # cached under the same key as an online answer
            waiting = self._in_jobs.get(key)
            record = CallRecord(model=model, request=(waiting.inputs if waiting else None) or {},
                                response=completion.to_response(), usage=completion.usage.to_dict(),
                                latency_ms=completion.latency_ms)
            await self.layer._cache_put(key, record)
        failures = {k: str(v) for k, v in outcome.items() if not isinstance(v, Completion) and k in keys}
        await asyncio.to_thread(self._finish_job, job_id, "processed", _counts(batch), None, failures)
        self.counts["done"] += len(answers)
        self.counts["failed"] += len(failures)
        for key in keys:
            waiting = self._in_jobs.pop(key, None)
            if waiting is None:
                continue
            value = outcome[key]
            if isinstance(value, Completion):
                for future in waiting.futures:
                    if not future.done():
                        future.set_result(_copy(value))
            else:
                _settle(waiting.futures, value)
        return outcome

    def _outcome(self, row: dict[str, Any], model: str) -> Completion | BatchFailure:
        response = row.get("response") or {}
        error = row.get("error")
        body = response.get("body") or {}
        if error or response.get("status_code") != 200:
            detail = error or body.get("error") or {}
            message = detail.get("message") if isinstance(detail, dict) else str(detail)
            return BatchFailure(f"status {response.get('status_code', '-')}: {message or 'failed in the batch'}")
        litellm = self.layer.litellm
        parsed = litellm.ModelResponse(**body)
        completion = self.layer._completion(model, parsed, row.get("custom_id"), latency_ms=None, attempts=1)
        completion.usage = CallUsage(completion.usage.prompt_tokens, completion.usage.completion_tokens,
                                     batch_cost(litellm, model, completion.usage))
        return completion

    def _connection(self, model: str) -> dict[str, Any]:
        kwargs = self.layer._connection_kwargs(model, self.layer.settings_for(model), self.layer.timeout, None)
        out = {k: kwargs[k] for k in ("api_base", "api_key") if k in kwargs}
        out["custom_llm_provider"] = model.partition("/")[0]
        return out

    def _progress(self) -> str:
        c = self.counts
        return f"{c['jobs']} jobs, {c['submitted']} requests submitted, {c['done']} done, {c['failed']} failed"

    # -- the run's database (or memory without one) -------------------------------
    def _tables(self):
        from ..store.models import BatchJobRow, BatchRequestRow

        return BatchJobRow.__table__, BatchRequestRow.__table__

    def _record_job(self, job_id: str, model: str, input_file_id: str, keys: list[str]) -> None:
        if self.engine is None:
            self._memory_jobs[job_id] = {"id": job_id, "model": model, "input_file_id": input_file_id,
                                         "provider_batch_id": None, "status": "creating", "keys": dict.fromkeys(keys,
                                                                                                             "pending")}
            return
        from sqlalchemy import insert

        jobs, requests = self._tables()
        with self.engine.begin() as connection:
            connection.execute(insert(jobs).values(id=job_id, run_id=self.run_id, model=model, status="creating",
                                                   input_file_id=input_file_id, requests=len(keys),
                                                   created_at=_now(jobs)))
            connection.execute(insert(requests), [{"job_id": job_id, "key": k, "state": "pending"} for k in keys])

    def _update_job(self, job_id: str, **values: Any) -> None:
        if self.engine is None:
            self._memory_jobs[job_id].update(values)
            return
        from sqlalchemy import update

        jobs, _ = self._tables()
        with self.engine.begin() as connection:
            connection.execute(update(jobs).where(jobs.c.id == job_id).values(**values))

    def _finish_job(self, job_id: str, status: str, counts: dict[str, Any], error: str | None,
                    failures: dict[str, str]) -> None:
        if self.engine is None:
            job = self._memory_jobs[job_id]
            job.update(status=status)
            for key in job["keys"]:
                job["keys"][key] = "failed" if (error or key in failures) else "answered"
            return
        from sqlalchemy import update

        jobs, requests = self._tables()
        with self.engine.begin() as connection:
            connection.execute(update(jobs).where(jobs.c.id == job_id).values(
                status=status, counts=counts, error=error, finished_at=_now(jobs)))
            if error:
                connection.execute(update(requests).where(requests.c.job_id == job_id).values(state="failed",
                                                                                               error=error))
                return
            connection.execute(update(requests).where(requests.c.job_id == job_id).values(state="answered"))
            for key, message in failures.items():
                connection.execute(update(requests).where(requests.c.job_id == job_id, requests.c.key == key)
                                   .values(state="failed", error=message))

    def _job(self, job_id: str) -> dict[str, Any]:
        if self.engine is None:
            return dict(self._memory_jobs[job_id])
        from sqlalchemy import select

        jobs, _ = self._tables()
        with self.engine.connect() as connection:
            return dict(connection.execute(select(jobs).where(jobs.c.id == job_id)).mappings().one())

    def _job_keys(self, job_id: str) -> list[str]:
        if self.engine is None:
            return list(self._memory_jobs[job_id]["keys"])
        from sqlalchemy import select

        _, requests = self._tables()
        with self.engine.connect() as connection:
            return list(connection.execute(select(requests.c.key).where(requests.c.job_id == job_id)).scalars())

    def _pending_job_of(self, key: str) -> str | None:
        """The job a call is waiting in (sent by this driver or by one that was killed), if any."""
        if self.engine is None:
            return next((j["id"] for j in self._memory_jobs.values()
                         if j["status"] != "processed" and j["keys"].get(key) == "pending"), None)
        from sqlalchemy import select

        jobs, requests = self._tables()
        with self.engine.connect() as connection:
            return connection.execute(
                select(requests.c.job_id).join(jobs, jobs.c.id == requests.c.job_id)
                .where(requests.c.key == key, requests.c.state == "pending", jobs.c.status != "processed")
                .limit(1)).scalar()

    def _failed_attempts(self, key: str) -> int:
        if self.engine is None:
            return sum(1 for j in self._memory_jobs.values() if j["keys"].get(key) == "failed")
        from sqlalchemy import func, select

        _, requests = self._tables()
        with self.engine.connect() as connection:
            return connection.execute(select(func.count()).select_from(requests)
                                      .where(requests.c.key == key, requests.c.state == "failed")).scalar() or 0


def batch_cost(litellm: Any, model: str, usage: CallUsage) -> float | None:
    """The provider's batch price for the call's tokens, or None when litellm's map has none."""
    try:
        info = litellm.get_model_info(model=model)
    except Exception:
        return None
    prompt_price, completion_price = info.get("input_cost_per_token_batches"), info.get("output_cost_per_token_batches")
    if prompt_price is None or completion_price is None or usage.prompt_tokens is None \
            or usage.completion_tokens is None:
        return None
    return usage.prompt_tokens * prompt_price + usage.completion_tokens * completion_price


def _settle(futures: list[asyncio.Future], error: BaseException) -> None:
    for future in futures:
        if not future.done():
            future.set_exception(error)


def _copy(completion: Completion) -> Completion:
    from dataclasses import replace

    return replace(completion)


def _counts(batch: Any) -> dict[str, Any]:
    counts = getattr(batch, "request_counts", None)
    if counts is None:
        return {}
    return {k: getattr(counts, k, None) for k in ("total", "completed", "failed")}


def _now(table: Any) -> datetime:
    from .cache import _naive

    now = datetime.now(timezone.utc)
    return now.replace(tzinfo=None) if _naive(table) else now


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
