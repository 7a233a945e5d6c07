"""The compiler: a long-lived, unprivileged helper the worker forks once to compile for its runs.

Compiling a candidate in its own freshly forked child cost that child ~1.2 ms, mostly
copy-on-write faults on the compiler's objects; compiling in the worker itself cost
about as much again, because every zygote burst write-protects the worker's heap. This
process is forked once, after the worker's warm-up, and never forks: it compiles warm.

It takes the untrusted side of compiling away from the worker: it parses candidate
source (never runs it) as its own unprivileged uid (or without capabilities in a user
namespace), in the jail, with a memory limit, no new processes and no way to write
files. Its replies reach the worker as JSON with the compiled code as an opaque
base64 string; the worker decodes the base64 (once, so runs need not) but never
unmarshals anything the compiler produced -- only the confined child that runs the
code does.

Protocol (frames from ``protocol.py``), one reply per request, in order:

- request ``{"id", "job", "compile_candidate": bool}``
- reply ``{"id", "status": "ok", "payload": base64(marshal((tests, code)))}``, where
  ``tests`` is (code, assert count, calls check) -- the run already holds the test source --
  and ``code`` is None when the candidate is left to its child; or ``{"id", "status":
  "verdict" | "test_error", "outcome": {...}}`` when the candidate or the tests do not compile.
"""

from __future__ import annotations

import binascii
import marshal
import os

from . import harness, jail, testcode
from .protocol import read_frame, write_frame

_TESTS_CACHE_SIZE = 256
#: the compiler's address space beyond what it inherited (parsing a 64 KiB source needs far less)
MEMORY_BYTES = 1 << 30


def compile_request(message: dict, tests_cache: dict) -> dict:
    """One reply for one request (the pure part: no I/O, so it is tested directly)."""
    job = message["job"]
    reply: dict = {"id": message["id"]}
    key = (job.get("tests") or "", bool(job.get("strict_results", True)))
    tests = tests_cache.get(key)
    if tests is None:
        try:
            tests = testcode.compile_tests(key[0], guard_comparisons=key[1])
        except harness.COMPILE_ERRORS as exc:
            reply.update(status="test_error", outcome={
                "status": "test_error", "phase": "compile", "message": f"the test code does not compile: {exc}"})
            return reply
        if len(tests_cache) >= _TESTS_CACHE_SIZE:
            tests_cache.pop(next(iter(tests_cache)))
        tests_cache[key] = tests
    code = None
    if message.get("compile_candidate"):
        try:
            code = harness.compile_candidate(job)
        except harness.COMPILE_ERRORS as exc:
            reply.update(status="verdict", outcome=harness.Harness(job, "", []).compile_failure(exc))
            return reply
    packed = marshal.dumps(((tests.code, tests.assert_statements, tests.calls_check), code))
    reply.update(status="ok", payload=binascii.b2a_base64(packed, newline=False).decode("ascii"))
    return reply


def unpack(payload: bytes, tests_source: str) -> tuple[testcode.CompiledTests, object]:
    """(tests, candidate code or None) from a reply's payload, base64-decoded -- in the run's child only.

    ``tests_source``: the job's test code, which the compiled tests were made from.
    """
    (code, asserts, calls_check), candidate = marshal.loads(payload)
    return testcode.CompiledTests(code, tests_source, asserts, calls_check), candidate


def compiler_main(request_r: int, reply_w: int, *, uid: int | None, user_namespace: bool,
                  proc_fd: int | None) -> None:
    """Entry point of the forked compiler. Never returns."""
    try:
        os.setpgid(0, 0)  # out of the worker's process group: a kill aimed at the compiler stays there
        keep = {request_r, reply_w} | ({proc_fd} if proc_fd is not None else set())
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.close(devnull)
        low = 3
        for fd in sorted(keep):
            os.closerange(low, fd)
            low = fd + 1
        os.closerange(low, 2**31 - 1)
        limits = jail.RunLimits(cpu_seconds=365 * 24 * 3600, memory_bytes=MEMORY_BYTES, file_bytes=0, open_files=16)
        jail.confine_run(limits, uid=uid, in_user_namespace=user_namespace, proc_fd=proc_fd)
        if proc_fd is not None:
            os.close(proc_fd)
        requests = os.fdopen(request_r, "rb")
        tests_cache: dict = {}
        while True:
            message = read_frame(requests)
            if message is None:  # the worker closed the pipe: done
                os._exit(0)
            write_frame(reply_w, compile_request(message, tests_cache))
    except BaseException:  # noqa: BLE001 - the worker sees EOF and compiles in the runs' children instead
        os._exit(70)
