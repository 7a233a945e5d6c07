"""The plugin's one pool of warm actors, driven from one event loop: a scorer's (one per
(scorer, config), on the run's loop) and the model actors' (``models``, on their own loop).

Each actor takes at most ``per_actor`` calls at a time (a scorer's: one batch scoring, one
waiting so the actor never idles between batches; model actors: unbounded, their engine queues),
so at most ``size * per_actor`` batches of a scorer are serialised and in flight whatever the
run's size. How many batches the run has pending is the runner's budget, not the pool's.

Faults: a call whose actor, worker process or node died is moved to another live actor, and
one replacement actor is started per lost actor (placed wherever the cluster has room). Ray
itself never retries (``max_restarts=0``, ``max_task_retries=0``): a call on a dead node would
burn its retries within seconds, while the driver knows which actors are alive. When no actor
of the pool has been alive for ``timeout`` seconds, or a call was lost ``attempts`` times, the
call raises ``ExecutorUnavailable``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from evalyard import Case, ExecutorUnavailable, Score

#: Seconds before another attempt when an actor could not be built (a node that cannot build
#: it now may be replaced by one that can; the pool's timeout bounds the waiting).
RETRY_DELAY = 1.0
#: Seconds the scorers' own ``close`` may take at the end of a run.
CLOSE_WAIT = 10.0


def lost_errors() -> tuple[type[BaseException], ...]:
    """Ray's errors for work lost with its worker, actor, node or object: the batch goes elsewhere."""
    from ray import exceptions as rx

    return (rx.RayActorError, rx.WorkerCrashedError, rx.NodeDiedError, rx.ObjectLostError, rx.OwnerDiedError,
            rx.ObjectFetchTimedOutError, rx.ReferenceCountingAssertionError, rx.LocalRayletDiedError,
            rx.RaySystemError)


def describe(exc: BaseException) -> str:
    """The first line of a Ray error: its class and what died (Ray's messages run to tracebacks)."""
    text = str(exc).strip().splitlines()
    head = next((line.strip() for line in text if line.strip()), "")
    return f"{type(exc).__name__}: {head}"[:300]


@dataclass(eq=False)
class Actor:
    handle: Any
    where: dict[str, Any] = field(default_factory=dict)
    in_flight: int = 0


class Progress:
    """When any batch of the run last came back: a pool waiting for room while the others'
    actors work is not stalled (their actors are released when their scorer is done)."""

    def __init__(self) -> None:
        self.last = time.monotonic()

    def mark(self) -> None:
        self.last = time.monotonic()


class ActorPool:
    """``size`` actors made by ``make()`` (each answering ``where()`` once started), for what
    ``name`` says (``scorer 'bertscore'``). ``release_when_idle``: a scorer's pool lets its actors
    go when no call is left (the run's other scorers get the CPUs); the model actors stay loaded.
    ``max_failed_starts``: after that many actors in a row died before starting, stop replacing
    them (a node that cannot even build one); None: keep trying until ``timeout``."""

    def __init__(self, name: str, make: Callable[[], Any], size: int, *, timeout: float,
                 progress: Progress | None = None, per_actor: int | None = 2,
                 resources: dict[str, float] | None = None, release_when_idle: bool = True,
                 max_failed_starts: int | None = None) -> None:
        self.name = name
        self.make = make
        self.size = size
        self.timeout = timeout
        self.progress = progress or Progress()
        self.per_actor = per_actor
        self.resources = resources or {}
        self.release_when_idle = release_when_idle
        self.max_failed_starts = max_failed_starts
        self.failed_starts = 0
        self.live: list[Actor] = []
        self.starting: list[Actor] = []
        self.lost = 0
        self.waiting = 0
        self.last_error: str | None = None
        self.closed = False
        self.nodes_used: set[str] = set()
        self._active = False
        self._changed: asyncio.Condition | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task] = set()
        self._no_actor_since = time.monotonic()

    # -- actors coming and going ---------------------------------------------
    def _start_all(self) -> None:
        """At the first batch, on the run's loop: the whole pool starts building at once."""
        if self._changed is None:
            self._changed = asyncio.Condition()
            self._loop = asyncio.get_running_loop()
        self._active = True
        self._no_actor_since = time.monotonic()
        for _ in range(self.size - len(self.live) - len(self.starting)):
            self._start()

    def _start(self) -> None:
        actor = Actor(self.make())
        self.starting.append(actor)
        task = asyncio.ensure_future(self._join(actor))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _join(self, actor: Actor) -> None:
        try:
            actor.where = await actor.handle.where.remote()
        except Exception as exc:  # its constructor raised, or its node died before it started
            self.starting.remove(actor)
            self.last_error = describe(exc)
            self.failed_starts += 1
            _kill(actor.handle)
            if self._gave_up():
                await self._notify()
                return
            await asyncio.sleep(RETRY_DELAY)
            if self._active and not self.closed:
                self._start()
            return
        self.failed_starts = 0
        self.starting.remove(actor)
        if not self._active or self.closed:
            _kill(actor.handle)
            return
        self.live.append(actor)
        self.nodes_used.add(actor.where["node_id"])
        await self._notify()

    async def _lose(self, actor: Actor, exc: BaseException) -> None:
        """Forget a dead actor and start its replacement (once, however many batches it held)."""
        self.last_error = describe(exc)
        if actor in self.live:
            self.live.remove(actor)
            self.lost += 1
            _kill(actor.handle)
            if not self.live:
                self._no_actor_since = time.monotonic()
            if self._active and not self.closed:
                self._start()
        await self._notify()

    def _release(self) -> None:
        """The scorer has no batch left: its actors give their CPUs to the run's other scorers."""
        self._active = False
        for task in list(self._tasks):
            task.cancel()
        for actor in self.live:
            _retire(actor.handle)
        for actor in self.starting:
            _kill(actor.handle)
        self.live, self.starting = [], []

    def _gave_up(self) -> bool:
        return self.max_failed_starts is not None and self.failed_starts >= self.max_failed_starts

    async def _notify(self) -> None:
        assert self._changed is not None
        async with self._changed:
            self._changed.notify_all()

    # -- batches ---------------------------------------------------------------
    async def _acquire(self) -> Actor:
        if not self._active:
            self._start_all()
        assert self._changed is not None
        async with self._changed:
            while True:
                free = [a for a in self.live if self.per_actor is None or a.in_flight < self.per_actor]
                if free:
                    actor = min(free, key=lambda a: a.in_flight)
                    actor.in_flight += 1
                    return actor
                if self.live:  # all busy: a batch coming back frees one
                    await self._changed.wait()
                    continue
                if not self.starting and self._gave_up():
                    raise ExecutorUnavailable(self._unavailable_message())
                now = time.monotonic()
                deadline = max(self._no_actor_since, self.progress.last) + self.timeout
                if now >= deadline:
                    raise ExecutorUnavailable(self._unavailable_message())
                try:
                    await asyncio.wait_for(self._changed.wait(), min(deadline - now, 1.0))
                except asyncio.TimeoutError:
                    pass

    def _unavailable_message(self) -> str:
        if self.last_error:
            cause = f"last failure: {self.last_error}"
        else:
            needs = ", ".join(f"{k}={v:g}" for k, v in sorted(self.resources.items())) or "cpu=1"
            cause = f"{len(self.starting)} actor(s) wait for a node with {needs} free"
        if self._gave_up():
            return (f"no Ray worker for {self.name}: {self.failed_starts} actor(s) in a row could not start "
                    f"({cause})")
        return (f"no Ray worker for {self.name} for {self.timeout:g} s ({cause}); "
                f"an infrastructure failure, not a scorer error")

    async def score(self, cases: list[Case]) -> list[Score]:
        """A batch on a scorer's actor (``ScorerWorker.score``): the scores, or the scorer's stop."""
        done = await self.call("score", cases)
        return done.result()  # the scores, or the scorer's stop raised as the core maps it

    async def call(self, method: str, *args: Any, attempts: int | None = None) -> Any:
        """``method(*args)`` on the live actor with the fewest calls in flight; a call lost with its
        actor goes to another (after ``attempts`` losses: ``ExecutorUnavailable``)."""
        import ray

        lost = lost_errors()
        losses = 0
        while True:
            self.waiting += 1
            try:
                actor = await self._acquire()
            finally:
                self.waiting -= 1
            sent = getattr(actor.handle, method).remote(*args)
            try:
                answer = await sent
            except lost as exc:
                actor.in_flight -= 1
                await self._lose(actor, exc)
                losses += 1
                if attempts is not None and losses >= attempts:
                    raise ExecutorUnavailable(f"no Ray worker for {self.name} could answer "
                                              f"({self.last_error})") from None
                continue  # the same call, on another live actor
            except BaseException as exc:
                actor.in_flight -= 1
                if isinstance(exc, asyncio.CancelledError):  # the caller gave up: so does the actor, if it can
                    try:
                        ray.cancel(sent)
                    except Exception:  # already finished, or the connection is gone
                        pass
                await self._notify()
                raise
            actor.in_flight -= 1
            self.progress.mark()
            if self.release_when_idle and not self.waiting and not any(a.in_flight for a in self.live):
                self._release()
            else:
                await self._notify()
            return answer

    # -- the end -----------------------------------------------------------------
    async def _cancel_tasks(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def close(self) -> None:
        """Called from the runner's thread after the run: stop the actors and the pool's tasks."""
        import ray

        self.closed = True
        self._active = False
        if self._tasks and self._loop is not None and not self._loop.is_closed():
            # cancelled and awaited on their own loop, so none is left pending when the loop goes
            try:
                asyncio.run_coroutine_threadsafe(self._cancel_tasks(), self._loop).result(timeout=CLOSE_WAIT)
            except Exception:
                pass
        # the scorer's own close first (a sandbox stops its children), bounded: a stuck actor is killed anyway
        if self.live:
            try:
                ray.wait([a.handle.close.remote() for a in self.live], num_returns=len(self.live),
                         timeout=CLOSE_WAIT)
            except Exception:
                pass
        for actor in self.live + self.starting:
            _kill(actor.handle)
        self.live, self.starting = [], []


def _retire(handle: Any) -> None:
    """Let an actor finish: the scorer's own close (a sandbox stops its children), then exit."""
    try:
        handle.close.remote()
        handle.__ray_terminate__.remote()
    except Exception:
        pass


def _kill(handle: Any) -> None:
    import ray

    try:
        ray.kill(handle, no_restart=True)
    except Exception:  # already gone, or the cluster connection is down
        pass
