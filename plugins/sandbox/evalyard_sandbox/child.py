"""What runs in the process the worker forks for one run: confine, run, report, exit.

The worker forks after the job is known, so the child already holds it (and the
tests, compiled by the worker) in memory. Nothing here returns into the worker's
loop: every path ends in ``os._exit``.
"""

from __future__ import annotations

import fcntl
import io
import os
import signal
import sys
import tempfile

from . import harness, jail, testcode


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


def _set_descriptors(out_w: int, res_w: int, proc_fd: int | None) -> None:
    """0 /dev/null (inherited), 1+2 the output pipe, 3 the verdict pipe (close-on-exec), 4 /proc
    until the limits are set; nothing else. Everything moves above 100 first so that no dup2
    below clobbers a source."""
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100) for fd in (out_w, res_w)]
    if proc_fd is not None:
        high.append(fcntl.fcntl(proc_fd, fcntl.F_DUPFD_CLOEXEC, 100))
    os.dup2(high[0], 1)
    os.dup2(high[0], 2)
    os.dup2(high[1], 3, inheritable=False)
    if proc_fd is not None:
        os.dup2(high[2], 4, inheritable=False)
    _close_all_but({3, 4} if proc_fd is not None else {3})
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="backslashreplace")
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
                                  write_through=True)


def run(job: dict, tests: testcode.CompiledTests, workdir: str, nonce: str, uid: int | None,
        limits: jail.RunLimits, out_w: int, res_w: int, *, iso: jail.Isolation, proc_fd: int | None,
        read_roots: list[str], run_sys_path: list[str]) -> None:
    """Entry point of a freshly forked child. Never returns."""
    result_fd = res_w  # where a set-up failure is reported until the verdict pipe sits on fd 3
    try:
        os.setpgid(0, 0)  # its own group: the worker's kill reaches everything the run starts
        _set_descriptors(out_w, res_w, proc_fd)
        result_fd = 3
        if iso.pid_namespace_per_run:
            _relay_through_pid_namespace()
        os.chdir(workdir)
        os.environ["HOME"] = os.environ["TMPDIR"] = workdir
        tempfile.tempdir = workdir  # the worker's own lookup cached the scratch root
        jail.confine_run(limits, uid=uid, in_user_namespace=iso.user_namespace,
                         proc_fd=4 if proc_fd is not None else None)
        if proc_fd is not None:
            os.close(4)
        sys.path[:] = run_sys_path  # the standard library only
        sys.argv[:] = [harness.CANDIDATE_FILENAME]  # not the worker's own arguments
    except BaseException as exc:  # noqa: BLE001 - set-up failed before any candidate code ran
        message = f"sandbox setup failed: {type(exc).__name__}: {exc}"
        try:
            os.write(result_fd, harness.verdict_frame(nonce, {"status": "sandbox_error", "message": message}))
        finally:
            os._exit(70)
    harness.run_and_report(job, workdir, read_roots, 3, nonce, tests,
                           network_isolated=iso.network_namespace)
