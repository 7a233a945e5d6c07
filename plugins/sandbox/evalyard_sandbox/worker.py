"""The sandbox worker: a small dedicated process that forks one confined child per run.

Started by ``client.SandboxClient`` as ``python -I -S -c <bootstrap>`` -- isolated
mode, no site-packages, no threads -- so that forking is cheap and ``RLIMIT_AS`` is
not eaten by whatever the platform process has loaded (torch alone would exceed a
512 MB limit). The platform never forks itself.

Protocol: frames (see ``protocol.py``) on the worker's original stdin/stdout, which
are moved to private descriptors at start so nothing a child prints can reach them.
One ``selectors`` loop multiplexes job input, each run's output and verdict pipes and
its pidfd; a run past its wall-clock deadline has its process group killed.

The worker compiles each distinct test source once (test code is the suite's, trusted);
candidate code is only ever parsed and compiled inside the confined child that runs it.
"""

from __future__ import annotations

import math
import os
import selectors
import signal
import sys
import time
import warnings
from collections import deque
from typing import Callable

from . import child, harness, jail, testcode
from .protocol import FrameReader, write_frame

#: Imported before any fork so that runs find them loaded instead of importing them each time:
#: the modules generated code imports most (HumanEval's problems import typing, math, random,
#: copy, string, collections, re and hashlib) and what the sandbox needs in every child. A run
#: may import any other standard-library module itself.
PRELOAD = (
    "bisect", "collections", "collections.abc", "copy", "datetime", "decimal", "fractions",
    "functools", "heapq", "itertools", "json", "math", "operator", "random", "re", "string",
    "typing", "evalyard_sandbox.audit",
)
_FINISH_GRACE_S = 0.25  # after exit, wait this long for pipes to reach EOF before finishing anyway
_MAX_VERDICT_BYTES = 1 << 20
_TESTS_CACHE_SIZE = 256


class Run:
    """One job from the platform, from its arrival to its verdict (a plain class: no dataclasses import)."""

    __slots__ = ("id", "job", "slot", "pid", "pidfd", "out_fd", "res_fd", "workdir", "nonce", "started",
                 "deadline", "output", "output_total", "verdict", "verdict_overflow", "timed_out",
                 "exit_status", "exited_at", "cpu_s")

    def __init__(self, id: str, job: dict) -> None:
        self.id, self.job = id, job
        self.slot = -1
        self.pid = 0
        self.pidfd: int | None = None
        self.out_fd: int | None = None
        self.res_fd: int | None = None
        self.workdir = self.nonce = ""
        self.started = self.deadline = self.exited_at = self.cpu_s = 0.0
        self.output = bytearray()
        self.output_total = 0
        self.verdict = bytearray()
        self.verdict_overflow = self.timed_out = False
        self.exit_status: int | None = None


def run_limits(job: dict) -> jail.RunLimits:
    return jail.RunLimits(
        cpu_seconds=max(1, math.ceil(float(job.get("timeout", 3.0)))),
        memory_bytes=int(job.get("memory_mb", 512)) * 1024 * 1024,
        file_bytes=int(job.get("max_file_bytes", 1 << 20)),
        open_files=int(job.get("max_open_files", 32)),
    )


class Worker:
    def __init__(self, settings: dict, iso: jail.Isolation, proto_in: int, proto_out: int, proc_fd: int | None):
        self.iso = iso
        self.proto_in, self.proto_out, self.proc_fd = proto_in, proto_out, proc_fd
        self.slots = max(1, int(settings.get("slots", 1)))
        self.free_slots = list(range(self.slots - 1, -1, -1))
        self.queue: deque[Run] = deque()
        self.running: dict[int, Run] = {}
        self.tests_cache: dict[tuple[str, bool], testcode.CompiledTests] = {}
        self.selector = selectors.DefaultSelector()
        self.reader = FrameReader()
        self.sequence = 0
        self.closing = False
        self.read_roots = jail.stdlib_dirs()
        # what a run may import from: the standard library entries of our own path (incl. lib-dynload)
        self.run_sys_path = [p for p in sys.path if any(p == r or p.startswith(r + os.sep) for r in self.read_roots)]

    # -- main loop --------------------------------------------------------------
    def loop(self) -> None:
        os.set_blocking(self.proto_in, False)
        self._watch(self.proto_in, self._read_jobs)
        while not (self.closing and not self.running):
            self._launch_queued()
            for key, _ in self.selector.select(self._select_timeout()):
                key.data()
            self._enforce_deadlines()
            self._finish_ready()

    def _select_timeout(self) -> float | None:
        now = time.monotonic()
        waits = [(r.deadline if r.exit_status is None else r.exited_at + _FINISH_GRACE_S) - now
                 for r in self.running.values()]
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
            self.queue.clear()
            for run in self.running.values():
                self._kill(run)
            return
        for message in self.reader.feed(data):
            op = message.get("op")
            if op == "run":
                self.queue.append(Run(id=str(message["id"]), job=message["job"]))
            elif op == "shutdown":
                self.closing = True
                self.queue.clear()

    def _send_result(self, run_id: str, result: dict) -> None:
        try:
            write_frame(self.proto_out, {"event": "result", "id": run_id, "result": result})
        except OSError:  # the platform is gone; finish killing and leave
            self.closing = True

    # -- launching --------------------------------------------------------------------
    def _tests(self, job: dict) -> testcode.CompiledTests | str:
        """The job's compiled tests (cached per source), or why they do not compile."""
        key = (job.get("tests") or "", bool(job.get("strict_results", True)))
        tests = self.tests_cache.get(key)
        if tests is None:
            try:
                tests = testcode.compile_tests(key[0], guard_comparisons=key[1])
            except harness.COMPILE_ERRORS as exc:
                return f"the test code does not compile: {exc}"
            if len(self.tests_cache) >= _TESTS_CACHE_SIZE:
                self.tests_cache.pop(next(iter(self.tests_cache)))
            self.tests_cache[key] = tests
        return tests

    def _launch_queued(self) -> None:
        while self.queue and self.free_slots and not self.closing:
            run = self.queue.popleft()
            tests = self._tests(run.job)
            if isinstance(tests, str):  # the suite's mistake: no process is started
                self._send_result(run.id, {"status": "test_error", "phase": "compile", "message": tests})
                continue
            if run.job.get("policy") == "restricted" and "evalyard_sandbox.policy" not in sys.modules:
                self._send_result(run.id, {"status": "sandbox_error",
                                           "message": "this worker was not started for the restricted policy"})
                continue
            run.slot = self.free_slots.pop()
            try:
                self._launch(run, tests)
            except OSError as exc:  # e.g. out of processes or descriptors
                self.free_slots.append(run.slot)
                self._remove_workdir(run)
                self._send_result(run.id, {"status": "sandbox_error", "message": f"could not start the run: {exc}"})

    def _launch(self, run: Run, tests: testcode.CompiledTests) -> None:
        self.sequence += 1
        run.workdir = os.path.join(self.iso.scratch_dir, f"run-{os.getpid()}-{self.sequence}")
        os.mkdir(run.workdir, 0o700)
        uid = None if self.iso.run_uid_base is None else self.iso.run_uid_base + run.slot
        if uid is not None:
            os.chown(run.workdir, uid, uid)
        run.nonce = os.urandom(16).hex()
        out_r, out_w = os.pipe()
        try:
            res_r, res_w = os.pipe()
        except OSError:
            os.close(out_r)
            os.close(out_w)
            raise
        try:
            pid = os.fork()
        except OSError:
            for fd in (out_r, out_w, res_r, res_w):
                os.close(fd)
            raise
        if pid == 0:  # the child: never returns into this loop
            child.run(run.job, tests, run.workdir, run.nonce, uid, run_limits(run.job), out_w, res_w,
                      iso=self.iso, proc_fd=self.proc_fd, read_roots=self.read_roots,
                      run_sys_path=self.run_sys_path)
        os.close(out_w)
        os.close(res_w)
        try:
            os.setpgid(pid, pid)  # also done in the child; whichever runs first wins the race
        except OSError:
            pass
        try:
            run.pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            run.pidfd = None
        run.pid, run.out_fd, run.res_fd = pid, out_r, res_r
        run.started = time.monotonic()
        run.deadline = run.started + float(run.job.get("timeout", 3.0))
        for fd in (run.out_fd, run.res_fd):
            os.set_blocking(fd, False)
        self._watch(run.out_fd, lambda: self._read_output(run))
        self._watch(run.res_fd, lambda: self._read_verdict(run))
        if run.pidfd is not None:
            self._watch(run.pidfd, lambda: self._reap(run))
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
        cpu_limit = run_limits(run.job).cpu_seconds
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


def main(argv: list[str]) -> None:
    import gc
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
    # The jail hides this package's directory: whatever runs need from it is imported now.
    # RestrictedPython only for a worker that serves the restricted policy.
    for name in PRELOAD + (("evalyard_sandbox.policy",) if settings.get("restricted") else ()):
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
    # Children would otherwise each collect (and so copy-on-write fault) the worker's whole heap.
    gc.collect()
    gc.freeze()
    worker = Worker(settings, iso, proto_in, proto_out, proc_fd)
    write_frame(proto_out, {"event": "ready", "pid": os.getpid(), "isolation": iso.to_dict()})
    worker.loop()
    if not iso.mount_jail:
        _remove_tree(iso.scratch_dir)
