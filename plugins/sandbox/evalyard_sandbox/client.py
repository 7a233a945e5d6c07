"""The platform side: start the sandbox worker, send it runs, collect verdicts.

Thread-safe (the runner may score several batches at once from its thread pool).
Whatever a run does, the platform process only ever reads frames from a pipe; if
the worker itself dies, pending runs end as ``sandbox_error`` (never a pass or a
fail) and the next submission starts a fresh worker.
"""

from __future__ import annotations

import collections
import itertools
import json
import os
import subprocess
import sys
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any


from .protocol import encode, read_frame

# argv[1]: import paths, one per line; argv[2]: worker settings as JSON
_BOOTSTRAP = (
    "import sys; sys.path[:0] = [p for p in sys.argv[1].splitlines() if p]; "
    "from evalyard_sandbox.worker import main; main(sys.argv[1:])"
)
_READY_TIMEOUT_S = 60.0


class SandboxUnavailable(RuntimeError):
    """The worker could not be started or died; the message carries its stderr."""


def _import_paths() -> list[str]:
    """Where the worker imports this package and RestrictedPython from (it runs without site)."""
    from importlib.util import find_spec

    spec = find_spec("RestrictedPython")  # located, not imported: the platform process never needs it
    if spec is None or spec.origin is None:
        raise SandboxUnavailable("RestrictedPython is not installed")
    paths = []
    for module_file in (__file__, spec.origin):
        package_dir = os.path.dirname(os.path.abspath(module_file))
        parent = os.path.dirname(package_dir)
        if parent not in paths:
            paths.append(parent)
    return paths


class SandboxClient:
    def __init__(self, *, slots: int, namespaces: bool = True, scratch_mb: int = 64,
                 force_user_namespace: bool = False, restricted: bool = False, path: str | None = None) -> None:
        """``restricted``: the worker loads the restricted policy (RestrictedPython) for its runs;
        ``path``: the worker's PATH (its only environment variable; default ``os.defpath``)."""
        self.path = path or os.defpath
        self.settings = {
            "slots": max(1, slots),
            "namespaces": namespaces,
            "scratch_mb": scratch_mb,
            "force_user_namespace": force_user_namespace,
            "restricted": restricted,
        }
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._ready: Future | None = None
        self._pending: dict[str, Future] = {}
        self._ids = itertools.count(1)
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=50)
        self.isolation: dict[str, Any] = {}

    # -- lifecycle ----------------------------------------------------------
    def _spawn_locked(self) -> None:
        """Start the worker process without waiting for it (its start-up overlaps the caller's)."""
        command = [sys.executable, "-I", "-S", "-c", _BOOTSTRAP, "\n".join(_import_paths()),
                   json.dumps(self.settings)]
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            close_fds=True, start_new_session=True, env={"PATH": self.path},
        )
        self._stderr_tail.clear()
        threading.Thread(target=self._drain_stderr, args=(process,), daemon=True,
                         name="evalyard-sandbox-stderr").start()
        ready: Future = Future()
        threading.Thread(target=self._read_results, args=(process, ready), daemon=True,
                         name="evalyard-sandbox-results").start()
        self._process, self._ready = process, ready

    def _ensure_started(self) -> subprocess.Popen:
        if self._process is None or self._process.poll() is not None:
            self._spawn_locked()
        process, ready = self._process, self._ready
        try:
            hello = ready.result(timeout=_READY_TIMEOUT_S)
        except FutureTimeout:
            self._process = None
            process.kill()
            raise SandboxUnavailable("the sandbox worker did not start within 60 s") from None
        except SandboxUnavailable:
            self._process = None
            process.kill()
            raise
        self.isolation = hello.get("isolation", {})
        return process

    def start(self) -> None:
        """Begin starting the worker now; the first submission waits for it to be ready."""
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._spawn_locked()

    def close(self) -> None:
        with self._lock:
            process, self._process = self._process, None
        if process is None:
            return
        try:
            process.stdin.write(encode({"op": "shutdown"}))
            process.stdin.close()
        except (BrokenPipeError, OSError, ValueError):
            pass
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        self._remove_host_leftovers()

    def _remove_host_leftovers(self) -> None:
        """What a worker that did not exit cleanly may leave on the host."""
        mountpoint = self.isolation.get("host_mountpoint")
        if mountpoint:
            try:
                os.rmdir(mountpoint)  # the empty directory the jail was mounted on
            except OSError:
                pass
        scratch = self.isolation.get("scratch_dir")
        if scratch and not self.isolation.get("mount_jail") and os.path.basename(scratch).startswith("evalyard-sandbox-"):
            import shutil

            shutil.rmtree(scratch, ignore_errors=True)

    def kill(self) -> None:
        """Stop the worker at once (used when a batch overruns its overall budget)."""
        with self._lock:
            process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.wait()
            self._remove_host_leftovers()

    # -- threads ---------------------------------------------------------------
    def _drain_stderr(self, process: subprocess.Popen) -> None:
        try:
            for line in iter(process.stderr.readline, b""):
                self._stderr_tail.append(line.decode("utf-8", "replace").rstrip())
        except (OSError, ValueError):
            pass
        finally:
            process.stderr.close()

    def _read_results(self, process: subprocess.Popen, ready: Future) -> None:
        try:
            while True:
                message = read_frame(process.stdout)
                if message is None:
                    break
                event = message.get("event")
                if event == "ready":
                    ready.set_result(message)
                elif event == "result":
                    with self._lock:
                        future = self._pending.pop(message["id"], None)
                    if future is not None and not future.done():
                        future.set_result(message["result"])
        except (OSError, ValueError):
            pass
        process.stdout.close()
        process.wait()
        if process.stdin and not process.stdin.closed:
            try:
                process.stdin.close()
            except OSError:
                pass
        error = SandboxUnavailable(self._death_message(process))
        if not ready.done():
            ready.set_exception(error)
        with self._lock:
            # only the runs this worker owned; a restarted worker's runs are not ours to fail
            orphans = [f for f in self._pending.values() if getattr(f, "_evalyard_process", None) is process]
            for key in [k for k, f in self._pending.items() if f in orphans]:
                del self._pending[key]
        for future in orphans:
            if not future.done():
                future.set_exception(error)

    def _death_message(self, process: subprocess.Popen) -> str:
        tail = "\n".join(list(self._stderr_tail)[-10:])
        message = f"the sandbox worker exited with status {process.returncode}"
        return f"{message}: {tail}" if tail else message

    # -- submitting ----------------------------------------------------------------
    def submit(self, job: dict) -> Future:
        future: Future = Future()
        with self._lock:
            process = self._ensure_started()
            run_id = str(next(self._ids))
            future._evalyard_process = process  # type: ignore[attr-defined]
            self._pending[run_id] = future
            try:
                process.stdin.write(encode({"op": "run", "id": run_id, "job": job}))
                process.stdin.flush()
            except (BrokenPipeError, OSError, ValueError) as exc:
                del self._pending[run_id]
                future.set_exception(SandboxUnavailable(f"could not reach the sandbox worker: {exc}"))
        return future

    def run_many(self, jobs: list[dict]) -> list[dict]:
        """Run jobs concurrently (up to the worker's slots); one result dict per job, in order."""
        futures = [self.submit(job) for job in jobs]
        slots = self.settings["slots"]
        longest = max((float(j.get("timeout", 3.0)) for j in jobs), default=0.0)
        # Generous: every job at its full time limit plus overheads, spread over the slots.
        budget = 60.0 + (len(jobs) / slots + 1) * (longest + 2.0)
        results: list[dict] = []
        for future in futures:
            try:
                results.append(future.result(timeout=budget))
            except FutureTimeout:
                self.kill()
                results.append({"status": "sandbox_error", "message": "the sandbox did not answer in time"})
            except SandboxUnavailable as exc:
                results.append({"status": "sandbox_error", "message": str(exc)})
        return results
