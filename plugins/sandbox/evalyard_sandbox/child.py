"""What runs in a process the worker forks: wait as a zygote, take one job, confine, run, exit.

The worker forks children ahead of need, in bursts ("zygotes" waiting on a pipe):
every fork write-protects the worker's whole heap, so the worker's next write to
each page faults once more; forking eight at a time pays that once per burst
instead of once per run. A zygote has no job when it is born, so it receives
everything it needs -- the job, its directory, the nonce, its uid, the tests and
candidate as the compiler compiled them (see compiler.py) -- as one marshal frame on
its control pipe, then never reads it again.

Nothing here returns into the worker's loop: every path ends in ``os._exit``.
"""

from __future__ import annotations

import fcntl
import io
import marshal
import os
import signal
import struct
import sys

from . import compiler, harness, jail

try:
    from . import _native
except ImportError:  # not built (no C compiler at install): the Python path below does the same
    _native = None

_LENGTH = struct.Struct(">I")

#: The run's stdout/stderr objects, built in the worker before any fork (see prepare()).
_STDOUT: io.TextIOWrapper | None = None
_STDERR: io.TextIOWrapper | None = None


def prepare() -> None:
    """Build the run's text streams on fds 1 and 2 in the worker; children only dup pipes under them."""
    global _STDOUT, _STDERR
    _STDOUT = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="backslashreplace")
    _STDERR = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
                               write_through=True)


def encode_assignment(job: dict, workdir: str, nonce: str, uid: int | None, compiled: bytes | None,
                      limits: jail.RunLimits) -> bytes:
    """``compiled``: the compiler's opaque payload, unpacked only here, in the confined child."""
    body = marshal.dumps({
        "job": job, "workdir": workdir, "nonce": nonce, "uid": uid, "compiled": compiled,
        "limits": (limits.cpu_seconds, limits.memory_bytes, limits.file_bytes, limits.open_files),
    })
    return _LENGTH.pack(len(body)) + body


def _read_exactly(fd: int, size: int) -> bytes | None:
    chunks, remaining = [], size
    while remaining:
        chunk = os.read(fd, remaining)
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _close_all_but(keep: set[int]) -> None:
    low = 3
    for fd in sorted(f for f in keep if f >= 3):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 2**31 - 1)


def _relay_through_pid_namespace() -> None:
    """Fork the run as PID 1 of a new PID namespace and mirror its exit status (returns in the run)."""
    jail.unshare(jail.CLONE_NEWPID)
    alive_r, alive_w = os.pipe()  # open write end == the relay still lives
    pid = os.fork()
    if pid == 0:
        os.close(alive_w)
        jail.prctl(jail.PR_SET_PDEATHSIG, signal.SIGKILL)  # the worker kills the relay: we die too
        # getppid() is 0 across the namespace boundary, so ask the pipe whether the relay
        # died before PDEATHSIG was armed (EOF) or still holds it open (would block).
        os.set_blocking(alive_r, False)
        try:
            if os.read(alive_r, 1) == b"":
                os._exit(70)
        except BlockingIOError:
            pass
        os.close(alive_r)
        return
    _close_all_but({alive_w})
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig != signal.SIGKILL:
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 70)


def zygote_main(ctrl_r: int, out_w: int, res_w: int, *, proc_fd: int | None, pid_namespace: bool,
                user_namespace: bool, read_roots: list[str], run_sys_path: list[str]) -> None:
    """Entry point of a zygote forked by ``os.fork`` (the Python path). Never returns."""
    try:
        os.setpgid(0, 0)
        _close_all_but({ctrl_r, out_w, res_w} | ({proc_fd} if proc_fd is not None else set()))
        if pid_namespace:
            _relay_through_pid_namespace()
        header = _read_exactly(ctrl_r, _LENGTH.size)
        if header is None:  # the worker is shutting down its idle zygotes
            os._exit(0)
        body = _read_exactly(ctrl_r, _LENGTH.unpack(header)[0])
        if body is None:
            os._exit(0)
        os.close(ctrl_r)
    except BaseException:  # noqa: BLE001 - no job yet, so nobody to tell
        os._exit(70)
    run_job(body, out_w, res_w, proc_fd=proc_fd, user_namespace=user_namespace, read_roots=read_roots,
            run_sys_path=run_sys_path, native=False)


def run_job(body: bytes, out_w: int, res_w: int, *, proc_fd: int | None, user_namespace: bool,
            read_roots: list[str], run_sys_path: list[str], native: bool) -> None:
    """A zygote's job has arrived (``body``, its frame): confine, run, report. Never returns.

    ``native``: the zygote came from ``_native.fork_zygote``, which has already done
    what zygote_main does before the job; confinement then goes through ``_native`` too.
    """
    nonce = None
    result_fd = [res_w]  # where a setup failure is reported; moves to 3 once the run's fds are in place
    try:
        assignment = marshal.loads(body)
        nonce = assignment["nonce"]
        _confine(assignment, out_w, res_w, proc_fd, user_namespace, run_sys_path, result_fd, native)
        if native:
            _reseed_random()
        job = assignment["job"]
        tests, candidate = (compiler.unpack(assignment["compiled"], job.get("tests") or "") if assignment["compiled"]
                            else (None, None))
        harness.run_and_report(job, assignment["workdir"], read_roots, 3, nonce, tests, candidate)
    except BaseException as exc:  # noqa: BLE001 - setup failed before any candidate code ran
        # The harness exits by itself, so this report is ours: an infrastructure error, never a verdict.
        if nonce is not None:
            message = f"sandbox setup failed: {type(exc).__name__}: {exc}"
            try:
                os.write(result_fd[0], harness.verdict_frame(nonce, {"status": "sandbox_error", "message": message}))
            except OSError:
                pass
    os._exit(70)


def _reseed_random() -> None:
    """What ``random``'s at-fork callback does, which the C fork skips: each run draws fresh numbers."""
    random = sys.modules.get("random")
    if random is not None:
        random.seed()  # the module's shared generator, the one its at-fork callback reseeds


def _set_home_and_tmpdir(workdir: str, native: bool) -> None:
    """HOME and TMPDIR are the run's directory, in the C environment and in ``os.environ``."""
    data = getattr(os.environ, "_data", None)  # os._Environ's mapping of encoded names to values
    if native and isinstance(data, dict):
        # _native.confine has set the C environment; only the mapping os.environ reads is left
        data[b"HOME"] = data[b"TMPDIR"] = os.fsencode(workdir)
    else:
        os.environ["HOME"] = os.environ["TMPDIR"] = workdir


def _confine(assignment: dict, out_w: int, res_w: int, proc_fd: int | None, user_namespace: bool,
             run_sys_path: list[str], result_fd: list[int], native: bool) -> None:
    workdir = assignment["workdir"]
    if native:
        # the same steps as below, in C: descriptors, directory, uid, prctl, limits
        _native.confine(out_w, res_w, -1 if proc_fd is None else proc_fd, os.fsencode(workdir),
                        -1 if assignment["uid"] is None else assignment["uid"], user_namespace,
                        *assignment["limits"])
        result_fd[0] = 3
    else:
        # Descriptors: 0 /dev/null, 1+2 output pipe, 3 verdict pipe (close-on-exec), 4 /proc until the
        # limits are set. Everything moves above 100 first so no dup2 below can clobber a source.
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100) for fd in (out_w, res_w)]
        if proc_fd is not None:
            high.append(fcntl.fcntl(proc_fd, fcntl.F_DUPFD_CLOEXEC, 100))
        result_fd[0] = high[1]
        os.dup2(high[0], 1)
        os.dup2(high[0], 2)
        os.dup2(high[1], 3, inheritable=False)
        result_fd[0] = 3
        if proc_fd is not None:
            os.dup2(high[2], 4, inheritable=False)
        _close_all_but({3, 4} if proc_fd is not None else {3})
        os.chdir(workdir)
    if _STDOUT is not None:
        sys.stdout, sys.stderr = _STDOUT, _STDERR
    _set_home_and_tmpdir(workdir, native)
    # tempfile is not preloaded (see worker.PRELOAD); a run that imports it picks TMPDIR, set above
    loaded_tempfile = sys.modules.get("tempfile")
    if loaded_tempfile is not None:
        loaded_tempfile.tempdir = workdir
    if not native:
        jail.confine_run(jail.RunLimits(*assignment["limits"]), uid=assignment["uid"],
                         in_user_namespace=user_namespace, proc_fd=4 if proc_fd is not None else None)
        if proc_fd is not None:
            os.close(4)
    sys.path[:] = run_sys_path  # the standard library only
