"""The sandbox worker: a small dedicated process that forks one confined child per run.

Started by ``client.SandboxClient`` as ``python -I -S -c <bootstrap>`` -- isolated
mode, no site-packages, no threads, no event loop -- so that forking is cheap
(~1-2 ms) and ``RLIMIT_AS`` is not eaten by whatever the platform process has
loaded (torch alone would exceed a 512 MB limit). The platform never forks itself.

Protocol: frames (see ``protocol.py``) on the worker's original stdin/stdout, which
are moved to private descriptors at start so nothing a child prints can reach them.
One ``selectors`` loop multiplexes job input, each run's output and verdict pipes and
its pidfd; a run past its wall-clock deadline has its process group killed. Children
are forked ahead of need, in bursts, as zygotes (see ``child.py``).
"""

from __future__ import annotations

import binascii
import math
import os
import selectors
import signal
import sys
import time
import warnings
from collections import deque
from typing import Callable

from . import child, compiler, harness, jail
from .protocol import FrameReader, encode, write_frame

#: Imported before any fork so that runs find them loaded: the modules generated code imports most
#: (HumanEval's 164 problems and tests import typing, math, random, copy, string, collections, re
#: and once hashlib), the cheap rest of the import allow-list, and what the sandbox itself needs
#: in every child. Each preloaded megabyte costs every run ~0.08 ms of CPU (fork copies its page
#: tables, the child's exit tears them down), so bulky, rarely used modules (calendar, difflib,
#: hashlib, statistics, tempfile, shutil: ~1.7 MB together, measured import by import) are left
#: to the runs that import them.
PRELOAD = (
    "array", "base64", "binascii", "bisect", "cmath", "collections", "collections.abc",
    "copy", "datetime", "decimal", "fractions", "functools", "heapq",
    "itertools", "json", "math", "numbers", "operator", "random", "re", "string",
    "struct", "textwrap", "time", "typing", "unicodedata", "zlib", "_string",
    "evalyard_sandbox.policy", "evalyard_sandbox.audit",
)
#: Zygotes forked per burst beyond the slots (one burst then serves several runs); a burst
#: never forks more than the runs waiting for one, so the last burst of a batch leaves at
#: most one idle zygote per slot (each costs a fork and an exit; it is killed unused).
ZYGOTE_BURST = 6
_FINISH_GRACE_S = 0.25  # after exit, wait this long for pipes to reach EOF before finishing anyway
_MAX_VERDICT_BYTES = 1 << 20
#: Candidates up to this size go to the compiler (see compiler.py); bigger ones compile in their
#: own child, under its CPU and memory limits, so no input can stall the compiler for long.
MAX_COMPILER_SOURCE_BYTES = 64 * 1024
#: Requests the compiler may hold at once (replies come back in order).
COMPILE_WINDOW = 8
#: A compile that takes longer than this gets the compiler killed; its run compiles in its child.
COMPILE_TIMEOUT_S = 10.0
#: After this many compiler deaths in one worker, every run compiles in its own child.
MAX_COMPILER_DEATHS = 5
#: The verdicts a compiler reply may carry, by reply status: compile failures only.
_COMPILE_VERDICTS = {"verdict": ("error", "memory"), "test_error": ("test_error",)}


# Plain classes, not dataclasses: ``dataclasses`` imports ``inspect`` (with ``dis`` and
# ``tokenize``), ~1.5 MB of the worker's heap that every fork would copy the page tables of and
# every child's exit would tear down again (see bench_sandbox.py's notes).
class Zygote:
    __slots__ = ("pid", "pidfd", "ctrl_w", "out_r", "res_r")

    def __init__(self, pid: int, pidfd: int | None, ctrl_w: int, out_r: int, res_r: int) -> None:
        self.pid, self.pidfd, self.ctrl_w, self.out_r, self.res_r = pid, pidfd, ctrl_w, out_r, res_r


class Compiler:
    __slots__ = ("pid", "request_w", "reply_r", "reader", "outgoing", "writing", "in_flight")

    def __init__(self, pid: int, request_w: int, reply_r: int) -> None:
        self.pid, self.request_w, self.reply_r = pid, request_w, reply_r
        self.reader = FrameReader()
        self.outgoing = bytearray()
        self.writing = False  # request_w is registered for EVENT_WRITE
        self.in_flight: deque = deque()  # Runs whose replies are due, oldest first


class Run:
    __slots__ = ("id", "job", "compiled", "compile_sent", "slot", "pid", "pidfd", "out_fd", "res_fd",
                 "workdir", "nonce", "started", "deadline", "output", "output_total", "verdict",
                 "verdict_overflow", "timed_out", "exit_status", "exited_at", "cpu_s")

    def __init__(self, id: str, job: dict) -> None:
        self.id = id
        self.job = job
        #: from the compiler: marshal((tests, candidate code or None)), base64-decoded; None: the child compiles
        self.compiled: bytes | None = None
        self.compile_sent = 0.0
        self.slot = -1
        self.pid = 0
        self.pidfd: int | None = None
        self.out_fd: int | None = None
        self.res_fd: int | None = None
        self.workdir = ""
        self.nonce = ""
        self.started = 0.0
        self.deadline = 0.0
        self.output = bytearray()
        self.output_total = 0
        self.verdict = bytearray()
        self.verdict_overflow = False
        self.timed_out = False
        self.exit_status: int | None = None
        self.exited_at = 0.0
        self.cpu_s = 0.0


def native_path_usable(settings: dict, iso: jail.Isolation) -> bool:
    """Whether zygotes may come from ``_native.fork_zygote`` (built, allowed, and safe here).

    That fork skips CPython's after-fork handling, which is only sound in a process
    with one thread; the PID-namespace relay exists only on the Python path.
    """
    if child._native is None or not settings.get("native", True) or iso.pid_namespace_per_run:
        return False
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


def _limits(job: dict) -> jail.RunLimits:
    return jail.RunLimits(
        cpu_seconds=max(1, math.ceil(float(job.get("timeout", 3.0)))),
        memory_bytes=int(job.get("memory_mb", 512)) * 1024 * 1024,
        file_bytes=int(job.get("max_file_bytes", 1 << 20)),
        open_files=int(job.get("max_open_files", 32)),
    )


class Worker:
    def __init__(self, settings: dict, iso: jail.Isolation, proto_in: int, proto_out: int, proc_fd: int | None):
        self.settings = settings
        self.iso = iso
        self.proto_in = proto_in
        self.proto_out = proto_out
        self.proc_fd = proc_fd
        self.slots = max(1, int(settings.get("slots", 1)))
        self.free_slots = list(range(self.slots - 1, -1, -1))
        self.queue: deque[Run] = deque()  # received, not yet sent to the compiler
        self.ready: deque[Run] = deque()  # compiled, waiting for a slot and a zygote
        self.compiler: Compiler | None = None
        self.compiler_deaths = 0
        # settings for tests: a short watchdog, or no compiler at all (runs compile in their children)
        self.compile_timeout = float(settings.get("compile_timeout_s", COMPILE_TIMEOUT_S))
        self.max_compiler_deaths = int(settings.get("max_compiler_deaths", MAX_COMPILER_DEATHS))
        self.running: dict[int, Run] = {}
        self.zygotes: deque[Zygote] = deque()
        self.selector = selectors.DefaultSelector()
        self.reader = FrameReader()
        self.sequence = 0
        self.closing = False
        self.read_roots = jail.stdlib_dirs()
        # what a run may import from: the standard library entries of our own path (incl. lib-dynload)
        self.run_sys_path = [p for p in sys.path if any(p == r or p.startswith(r + os.sep) for r in self.read_roots)]
        #: zygotes forked and confined by the C path (child.py's _native); see native_path_usable
        self.native = native_path_usable(settings, iso)

    # -- main loop --------------------------------------------------------------
    def loop(self) -> None:
        os.set_blocking(self.proto_in, False)
        self._watch(self.proto_in, self._read_jobs)
        if self.compiler is None:
            self._start_compiler()
        self._refill_zygotes()
        while not (self.closing and not self.running):
            if not self.closing:
                self._dispatch_compiles()
            if self.ready and not self.closing:
                self._refill_zygotes()
                self._launch_queued()
                if self.ready and not self.zygotes and not self.running:
                    self._fail_queue("cannot fork a sandbox process (process limit?)")
            for key, _ in self.selector.select(self._select_timeout()):
                key.data()
            self._enforce_deadlines()
            self._finish_ready()
        self._dismiss_zygotes()
        self._stop_compiler()

    def _select_timeout(self) -> float | None:
        now = time.monotonic()
        waits = [(r.deadline if r.exit_status is None else r.exited_at + _FINISH_GRACE_S) - now
                 for r in self.running.values()]
        if self.compiler is not None and self.compiler.in_flight:
            waits.append(self.compiler.in_flight[0].compile_sent + self.compile_timeout - now)
        timeout = max(0.0, min(waits)) if waits else None
        if any(r.pidfd is None for r in self.running.values()):
            timeout = 0.005 if timeout is None else min(timeout, 0.005)  # no pidfd: poll for exits
        return timeout

    def _watch(self, fd: int, callback: Callable[[], None]) -> None:
        self.selector.register(fd, selectors.EVENT_READ, callback)

    def _unwatch(self, fd: int) -> None:
        try:
            self.selector.unregister(fd)
        except (KeyError, ValueError):
            pass

    def _read_jobs(self) -> None:
        try:
            data = os.read(self.proto_in, 1 << 20)
        except BlockingIOError:
            return
        if not data:  # the platform went away: stop everything
            self.closing = True
            self._unwatch(self.proto_in)
            self._drop_pipeline()
            for run in self.running.values():
                self._kill(run)
            return
        for message in self.reader.feed(data):
            op = message.get("op")
            if op == "run":
                self.queue.append(Run(id=str(message["id"]), job=message["job"]))
            elif op == "shutdown":
                self.closing = True
                self._drop_pipeline()

    def _drop_pipeline(self) -> None:
        self.queue.clear()
        self.ready.clear()
        if self.compiler is not None:
            self.compiler.in_flight.clear()

    def _fail_queue(self, message: str) -> None:
        while self.ready:
            self._send_result(self.ready.popleft().id, {"status": "sandbox_error", "message": message})

    def _send(self, message: dict) -> None:
        try:
            write_frame(self.proto_out, message)
        except OSError:  # the platform is gone; finish killing and leave
            self.closing = True

    def _send_result(self, run_id: str, result: dict) -> None:
        self._send({"event": "result", "id": run_id, "result": result})

    # -- zygotes --------------------------------------------------------------------
    def _backlog(self) -> int:
        """Runs received and not yet launched (queued, compiling, or compiled and waiting)."""
        compiling = len(self.compiler.in_flight) if self.compiler is not None else 0
        return len(self.queue) + compiling + len(self.ready)

    def _refill_zygotes(self) -> None:
        if len(self.zygotes) >= self.slots:
            return
        wanted = max(self.slots, min(self.slots + ZYGOTE_BURST, self._backlog())) - len(self.zygotes)
        pipes: list[tuple[int, ...]] = []
        try:
            for _ in range(wanted):
                pipes.append((*os.pipe(), *os.pipe(), *os.pipe()))  # ctrl r/w, output r/w, verdict r/w
        except OSError as exc:  # out of descriptors: use what we have
            print(f"evalyard-sandbox: cannot make pipes for a zygote: {exc}", file=sys.stderr)
        pids = self._fork_burst(pipes)
        for fds, pid in zip(pipes, pids):
            self.zygotes.append(self._adopt_zygote(pid, fds))
        for fds in pipes[len(pids):]:  # not forked (process limit): nothing will use them
            for fd in fds:
                os.close(fd)

    def _fork_burst(self, pipes: list[tuple[int, ...]]) -> list[int]:
        """Fork one zygote per set of pipes, back to back, with as little Python as possible between.

        Each fork write-protects this process's memory, and every page it writes afterwards
        faults once more: forking in a tight loop and doing the bookkeeping after the burst
        pays those faults once per burst instead of once per zygote.
        """
        pids: list[int] = []
        native = child._native if self.native else None
        proc_fd = -1 if self.proc_fd is None else self.proc_fd
        for fds in pipes:
            try:
                if native is not None:
                    pid, body = native.fork_zygote(fds[0], fds[3], fds[5], proc_fd)
                    if pid == 0:  # the child, its job in hand (the same steps as zygote_main's, in C)
                        child.run_job(body, fds[3], fds[5], proc_fd=self.proc_fd,
                                      user_namespace=self.iso.user_namespace, read_roots=self.read_roots,
                                      run_sys_path=self.run_sys_path, native=True)
                        os._exit(70)  # not reached: a child must never fall back into this loop
                    pids.append(pid)
                    continue
                pid = os.fork()
            except OSError as exc:  # e.g. EAGAIN under a process limit: use what we have
                print(f"evalyard-sandbox: cannot fork a zygote: {exc}", file=sys.stderr)
                break
            if pid == 0:
                # The worker's queues are left as they are: freeing their runs here (code, tests)
                # cost every child ~300 copy-on-write faults, and freed memory keeps its bytes
                # anyway. What separates runs is the OS: other runs' pipes are closed in the child
                # (zygote_main keeps only its own), and their uids differ.
                child.zygote_main(fds[0], fds[3], fds[5], proc_fd=self.proc_fd,
                                  pid_namespace=self.iso.pid_namespace_per_run,
                                  user_namespace=self.iso.user_namespace, read_roots=self.read_roots,
                                  run_sys_path=self.run_sys_path)
            pids.append(pid)
        return pids

    def _adopt_zygote(self, pid: int, fds: tuple[int, ...]) -> Zygote:
        ctrl_r, ctrl_w, out_r, out_w, res_r, res_w = fds
        for fd in (ctrl_r, out_w, res_w):
            os.close(fd)
        try:
            os.setpgid(pid, pid)  # also done in the child; whichever runs first wins the race
        except OSError:
            pass
        try:
            pidfd: int | None = os.pidfd_open(pid)
        except (AttributeError, OSError):
            pidfd = None
        zygote = Zygote(pid, pidfd, ctrl_w, out_r, res_r)
        if pidfd is not None:
            self._watch(pidfd, lambda: self._zygote_died(zygote))
        return zygote

    def _zygote_died(self, zygote: Zygote) -> None:
        """An idle zygote exited (it should not): forget it."""
        try:
            self.zygotes.remove(zygote)
        except ValueError:
            return
        self._discard_zygote(zygote)

    def _discard_zygote(self, zygote: Zygote) -> None:
        self._close_kill_reap(zygote.pid, (zygote.pidfd, zygote.ctrl_w, zygote.out_r, zygote.res_r))

    def _close_kill_reap(self, pid: int, fds: tuple[int | None, ...]) -> None:
        """Forget a helper process: stop watching and close its descriptors, kill its group, reap it."""
        for fd in fds:
            if fd is not None:
                self._unwatch(fd)
                os.close(fd)
        for kill, target in ((os.killpg, pid), (os.kill, pid)):  # zygotes and the compiler lead their own group
            try:
                kill(target, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass

    def _dismiss_zygotes(self) -> None:
        while self.zygotes:
            self._discard_zygote(self.zygotes.popleft())

    # -- the compiler -----------------------------------------------------------------
    def _start_compiler(self) -> None:
        """Fork the compiler (see compiler.py); without one, runs compile in their own children."""
        if self.compiler_deaths >= self.max_compiler_deaths:
            return
        request_r, request_w = os.pipe()
        reply_r, reply_w = os.pipe()
        try:
            pid = os.fork()
        except OSError as exc:
            print(f"evalyard-sandbox: cannot fork the compiler: {exc}", file=sys.stderr)
            for fd in (request_r, request_w, reply_r, reply_w):
                os.close(fd)
            self.compiler_deaths = self.max_compiler_deaths
            return
        if pid == 0:  # as for zygotes, the worker's queues are left alone (see _fork_burst)
            uid = None if self.iso.run_uid_base is None else self.iso.run_uid_base + self.slots
            compiler.compiler_main(request_r, reply_w, uid=uid, user_namespace=self.iso.user_namespace,
                                   proc_fd=self.proc_fd)
        os.close(request_r)
        os.close(reply_w)
        try:
            os.setpgid(pid, pid)  # also done in the compiler; whichever runs first wins the race
        except OSError:
            pass
        os.set_blocking(request_w, False)
        os.set_blocking(reply_r, False)
        # its death shows as EOF on the reply pipe (see _read_compiled)
        self.compiler = Compiler(pid, request_w, reply_r)
        self._watch(reply_r, self._read_compiled)

    def _stop_compiler(self) -> None:
        link, self.compiler = self.compiler, None
        if link is not None:  # it holds nothing worth a graceful exit (and may be stopped, or stuck)
            self._close_kill_reap(link.pid, (link.request_w, link.reply_r))

    def _dispatch_compiles(self) -> None:
        link = self.compiler
        while self.queue and (link is None or len(link.in_flight) < COMPILE_WINDOW):
            run = self.queue.popleft()
            if link is None:  # no compiler (it kept dying): the run compiles in its own child
                self.ready.append(run)
                continue
            if run.job.get("compile_in_run"):  # the user asked for each candidate to compile in its own run
                self.ready.append(run)
                continue
            code = run.job.get("code")
            small = isinstance(code, str) and len(code) <= MAX_COMPILER_SOURCE_BYTES
            link.outgoing += encode({"id": run.id, "job": run.job, "compile_candidate": small})
            run.compile_sent = time.monotonic()
            link.in_flight.append(run)
        if link is not None:
            self._flush_requests()

    def _flush_requests(self) -> None:
        """Write what the pipe takes now; the rest waits for EVENT_WRITE (never block on the compiler)."""
        link = self.compiler
        if link is None:
            return
        try:
            while link.outgoing:
                written = os.write(link.request_w, link.outgoing)
                del link.outgoing[:written]
        except BlockingIOError:
            pass
        except OSError:  # the compiler is gone; its EOF on the reply pipe does the rest
            link.outgoing.clear()
        if link.outgoing and not link.writing:
            self.selector.register(link.request_w, selectors.EVENT_WRITE, self._flush_requests)
            link.writing = True
        elif not link.outgoing and link.writing:
            self._unwatch(link.request_w)
            link.writing = False

    def _read_compiled(self) -> None:
        link = self.compiler
        if link is None:
            return
        if self.closing:  # shutting down: its replies (or its EOF) no longer matter
            self._stop_compiler()
            return
        try:
            data = os.read(link.reply_r, 1 << 20)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._compiler_died()
            return
        try:
            replies = link.reader.feed(data)
        except ValueError:
            self._compiler_died()
            return
        for reply in replies:
            if not link.in_flight or not isinstance(reply, dict) or reply.get("id") != link.in_flight[0].id:
                self._compiler_died()  # out of step: trust none of it
                return
            run = link.in_flight.popleft()
            status = reply.get("status")
            if status == "ok" and isinstance(reply.get("payload"), str):
                try:  # decoded here, once, so that each child only unmarshals (never unmarshalled here)
                    run.compiled = binascii.a2b_base64(reply["payload"])
                except binascii.Error:
                    self._compiler_died()  # a compiler that sends malformed payloads is not trusted
                    return
                self.ready.append(run)
            elif status in _COMPILE_VERDICTS and isinstance(reply.get("outcome"), dict):
                self._send_direct(run, status, reply["outcome"])
            else:
                run.compiled = None
                self.ready.append(run)

    def _send_direct(self, run: Run, kind: str, outcome: dict) -> None:
        self._send_result(run.id, direct_outcome(kind, outcome))

    def _compiler_died(self) -> None:
        """The compiler exited, was killed or misbehaved: requeue its work and start another.

        Requests are answered in order, so the oldest unanswered one is the one it died on:
        that run compiles in its own child, under the run's limits, like any large source.
        """
        link = self.compiler
        if link is None:
            return
        pending = list(link.in_flight)
        link.in_flight.clear()
        self._stop_compiler()
        self.compiler_deaths += 1
        print(f"evalyard-sandbox: the compiler stopped with {len(pending)} request(s) in flight "
              f"({self.compiler_deaths} of {self.max_compiler_deaths} restarts)", file=sys.stderr)
        if pending:
            suspect = pending.pop(0)
            suspect.compiled = None
            self.ready.append(suspect)
        self.queue.extendleft(reversed(pending))
        if not self.closing:
            self._start_compiler()
            if self.compiler is None:
                print("evalyard-sandbox: the compiler keeps failing; runs compile in their own processes",
                      file=sys.stderr)

    # -- launching --------------------------------------------------------------------
    def _launch_queued(self) -> None:
        while self.ready and self.free_slots and self.zygotes and not self.closing:
            run = self.ready.popleft()
            zygote = self.zygotes.popleft()
            run.slot = self.free_slots.pop()
            try:
                self._launch(run, zygote)
            except OSError as exc:
                self.free_slots.append(run.slot)
                self._discard_zygote(zygote)
                self._remove_workdir(run)
                if isinstance(exc, BrokenPipeError):  # the zygote died before taking the job: retry
                    self.ready.appendleft(run)
                    continue
                self._send_result(run.id, {"status": "sandbox_error", "message": f"could not start the run: {exc}"})

    def _run_uid(self, slot: int) -> int | None:
        return None if self.iso.run_uid_base is None else self.iso.run_uid_base + slot

    def _launch(self, run: Run, zygote: Zygote) -> None:
        self.sequence += 1
        run.workdir = os.path.join(self.iso.scratch_dir, f"run-{os.getpid()}-{self.sequence}")
        os.mkdir(run.workdir, 0o700)
        uid = self._run_uid(run.slot)
        if uid is not None:
            os.chown(run.workdir, uid, uid)
        run.nonce = os.urandom(16).hex()
        assignment = child.encode_assignment(run.job, run.workdir, run.nonce, uid, run.compiled, _limits(run.job))
        view = memoryview(assignment)
        while view:
            view = view[os.write(zygote.ctrl_w, view):]
        os.close(zygote.ctrl_w)
        run.pid, run.pidfd, run.out_fd, run.res_fd = zygote.pid, zygote.pidfd, zygote.out_r, zygote.res_r
        run.started = time.monotonic()
        run.deadline = run.started + float(run.job.get("timeout", 3.0))
        for fd in (run.out_fd, run.res_fd):
            os.set_blocking(fd, False)
        self._watch(run.out_fd, lambda: self._read_output(run))
        self._watch(run.res_fd, lambda: self._read_verdict(run))
        if run.pidfd is not None:
            self.selector.modify(run.pidfd, selectors.EVENT_READ, lambda: self._reap(run))
        self.running[run.pid] = run

    # -- watching ----------------------------------------------------------------------
    def _read_chunk(self, run: Run, attr: str) -> bytes | None:
        """Whatever the pipe ``run.<attr>`` holds now; None when nothing (yet) or it reached EOF (then closed)."""
        try:
            data = os.read(getattr(run, attr), 1 << 16)
        except BlockingIOError:
            return None
        except OSError:
            data = b""
        if not data:
            self._close(run, attr)
            return None
        return data

    def _read_output(self, run: Run) -> None:
        cap = int(run.job.get("max_output_bytes", 65536))
        data = self._read_chunk(run, "out_fd")
        if data is None:
            return
        run.output_total += len(data)
        room = cap - len(run.output)
        if room > 0:
            run.output += data[:room]
        # beyond the cap the output is read and dropped, so the child never blocks on a full pipe

    def _read_verdict(self, run: Run) -> None:
        data = self._read_chunk(run, "res_fd")
        if data is None:
            return
        if len(run.verdict) + len(data) > _MAX_VERDICT_BYTES:
            run.verdict_overflow = True
        else:
            run.verdict += data

    def _close(self, run: Run, attr: str) -> None:
        fd = getattr(run, attr)
        if fd is not None:
            self._unwatch(fd)
            os.close(fd)
            setattr(run, attr, None)

    def _kill(self, run: Run) -> None:
        for target in (-run.pid, run.pid):  # the group first, then the leader should it have left it
            try:
                os.kill(target, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def _reap(self, run: Run) -> None:
        if run.exit_status is not None:
            return
        # Kill stragglers in the group while the zombie still pins the group id (no pid reuse race).
        try:
            os.killpg(run.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            pid, status, usage = os.wait4(run.pid, os.WNOHANG)
        except ChildProcessError:
            pid, status, usage = run.pid, 0, None
        if pid == 0:
            return
        run.exit_status = status
        run.exited_at = time.monotonic()
        run.cpu_s = (usage.ru_utime + usage.ru_stime) if usage else 0.0
        self._close(run, "pidfd")

    def _enforce_deadlines(self) -> None:
        now = time.monotonic()
        link = self.compiler
        if link is not None and link.in_flight and now >= link.in_flight[0].compile_sent + self.compile_timeout:
            try:
                os.kill(link.pid, signal.SIGKILL)  # its EOF arrives next; _compiler_died requeues
            except ProcessLookupError:
                pass
            self._compiler_died()
        for run in list(self.running.values()):
            if run.exit_status is None and now >= run.deadline and not run.timed_out:
                run.timed_out = True
                self._kill(run)
            if run.exit_status is None and (run.pidfd is None or run.timed_out):
                self._reap(run)

    def _finish_ready(self) -> None:
        now = time.monotonic()
        for pid, run in list(self.running.items()):
            if run.exit_status is None:
                continue
            pipes_open = run.out_fd is not None or run.res_fd is not None
            if pipes_open and now < run.exited_at + _FINISH_GRACE_S:
                continue
            self._close(run, "out_fd")
            self._close(run, "res_fd")
            del self.running[pid]
            self.free_slots.append(run.slot)
            self._remove_workdir(run)
            self._send_result(run.id, self._result(run))

    # -- verdicts ----------------------------------------------------------------------
    def _result(self, run: Run) -> dict:
        status = run.exit_status or 0
        elapsed = (run.exited_at or time.monotonic()) - run.started
        outcome = self._classify(run, status)
        outcome.update({
            "output": run.output.decode("utf-8", "replace"),
            "output_bytes": run.output_total,
            "output_truncated": run.output_total > len(run.output),
            "elapsed_s": round(elapsed, 4),
            "cpu_s": round(run.cpu_s, 4),
        })
        if os.WIFSIGNALED(status):
            outcome["signal"] = signal.Signals(os.WTERMSIG(status)).name
        elif os.WIFEXITED(status):
            outcome["exit_code"] = os.WEXITSTATUS(status)
        return outcome

    def _classify(self, run: Run, status: int) -> dict:
        timeout = float(run.job.get("timeout", 3.0))
        if run.timed_out:
            return {"status": "timeout", "message": f"wall-clock limit of {timeout:g} s exceeded; process group killed"}
        verdict, problem = (None, "the verdict channel overflowed") if run.verdict_overflow else \
            harness.parse_verdict(bytes(run.verdict), run.nonce)
        if problem:
            return {"status": "fail", "message": f"verdict rejected: {problem}"}
        signaled = os.WIFSIGNALED(status)
        if verdict is not None and (not signaled or verdict.get("status") == "sandbox_error"):
            return verdict
        cpu_limit = _limits(run.job).cpu_seconds
        if signaled:
            sig = os.WTERMSIG(status)
            if sig == signal.SIGXCPU or (sig == signal.SIGKILL and run.cpu_s >= cpu_limit - 0.05):
                return {"status": "timeout", "message": f"CPU time limit of {cpu_limit} s exceeded"}
            text = run.output[-4096:].decode("utf-8", "replace")
            if "MemoryError" in text or "Cannot allocate memory" in text or "out of memory" in text:
                return {"status": "memory", "message": f"killed by {signal.Signals(sig).name} out of memory"}
            return {"status": "error", "message": f"the run was killed by {signal.Signals(sig).name}"}
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
        if code == 0:
            return {"status": "fail", "message": "the process exited with status 0 before the tests completed"}
        return {"status": "error", "message": f"the process exited with status {code} before the tests completed"}

    # -- clean-up ------------------------------------------------------------------------
    def _remove_workdir(self, run: Run) -> None:
        if run.workdir:
            _remove_tree(run.workdir)


def direct_outcome(kind: str, outcome: dict) -> dict:
    """The result for a run decided before any process ran: its candidate or tests do not compile.

    Only a failing verdict can come this way: whatever a compiler reply says, a run that
    never ran is never a pass.
    """
    if outcome.get("status") not in _COMPILE_VERDICTS.get(kind, ()):
        return {"status": "sandbox_error", "message": "the compiler sent a verdict it cannot give"}
    if kind == "verdict":
        return dict(outcome, output="", output_bytes=0, output_truncated=False, elapsed_s=0.0, cpu_s=0.0)
    return dict(outcome)


def _remove_tree(path: str) -> None:
    """Remove a run directory: usually empty (one rmdir), else a tree a run may have made unreadable."""
    try:
        os.rmdir(path)
        return
    except FileNotFoundError:
        return
    except OSError:
        pass
    import shutil

    def fix_and_retry(function, target, _exc_info):
        try:
            os.chmod(os.path.dirname(target), 0o700)
            os.chmod(target, 0o700)
            function(target)
        except OSError:
            pass

    shutil.rmtree(path, onerror=fix_and_retry)


#: CPython 3.11 specialises a function's bytecode in place after a few calls; doing that here,
#: once, spares every child the copy-on-write faults of doing it again.
WARM_UP_ROUNDS = 2
_WARM_UP_JOB = {
    "code": (
        "from typing import List\nimport math\n"
        "class Box:\n    def __init__(self, items):\n        self.items = list(items)\n"
        "def f(xs: List[int]) -> List[int]:\n    out = []\n    seen = {}\n"
        "    for i, x in enumerate(xs):\n        seen[x] = seen.get(x, 0)\n        seen[x] += 1\n"
        "        out.append(int(math.sqrt(x * x)) + i - i)\n"
        "    return [v for v in Box(out).items if v is not None]\n"
    ),
    "tests": "def check(candidate):\n    assert candidate([1, 2, 3]) == [1, 2, 3]\n    assert candidate([]) == []\n",
    "entry_point": "f",
    "audit_hook": False,
}


def _warm_up() -> None:
    """Evaluate a fixed job in-process, prepare what every child needs, then freeze the heap.

    Lazy caches (compiled regexes, AST visitor lookups, specialised bytecode...) filled here
    are inherited by every child instead of rebuilt in each; ``gc.freeze`` keeps the
    children's collections from walking (and so copy-on-write faulting) the worker's heap.
    """
    import gc

    from . import audit, policy

    for _ in range(WARM_UP_ROUNDS):
        for name in ("restricted", "os_only"):
            harness.Harness(dict(_WARM_UP_JOB, policy=name), "/", []).run()
    policy.prepare()
    harness.prepare()
    child.prepare()
    audit.prepare(jail.stdlib_dirs())  # last: it records what is imported by now
    gc.collect()
    gc.freeze()


def main(argv: list[str]) -> None:
    import json

    settings = json.loads(argv[1]) if len(argv) > 1 else {}
    # Private copies of the protocol pipes; fd 0/1 become /dev/null and stderr, so stray
    # prints (ours or a child's before it redirects) can never corrupt a frame.
    proto_in = os.dup(0)
    proto_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    os.close(devnull)
    os.environ.clear()  # what runs see, apart from their own HOME and TMPDIR
    os.environ.update({"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    warnings.simplefilter("ignore")  # RestrictedPython's SyntaxWarnings would land in every run's output
    for name in PRELOAD:
        try:
            __import__(name)
        except ImportError:
            pass
    try:
        proc_fd: int | None = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        proc_fd = None
    iso = jail.setup_worker(
        namespaces=bool(settings.get("namespaces", True)),
        scratch_mb=int(settings.get("scratch_mb", 64)),
        uid_base=int(settings.get("uid_base", 1_900_000_000)),
        slots=int(settings.get("slots", 1)),
        force_user_namespace=bool(settings.get("force_user_namespace", False)),
    )
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the platform decides when we stop (EOF or shutdown)
    # Each run points these at its own directory; having them already lets the C path do that
    # without growing the environment (see _native.c, confine).
    os.environ["HOME"] = os.environ["TMPDIR"] = iso.scratch_dir
    _warm_up()
    worker = Worker(settings, iso, proto_in, proto_out, proc_fd)
    worker._start_compiler()  # before the hello, so the platform learns its pid (tests kill it)
    write_frame(proto_out, {"event": "ready", "pid": os.getpid(), "isolation": iso.to_dict(),
                            "compiler_pid": worker.compiler.pid if worker.compiler else None,
                            "native": worker.native})
    worker.loop()
    if not iso.mount_jail:
        _remove_tree(iso.scratch_dir)
    # Nothing is buffered (frames go out with os.write) and every run is reaped: skip the
    # interpreter's teardown, a few ms of the platform's wait in close().
    sys.stderr.flush()
    os._exit(0)
