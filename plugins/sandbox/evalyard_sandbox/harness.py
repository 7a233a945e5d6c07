"""Runs inside the confined child: compile, execute the candidate, run the tests, report one verdict.

The verdict travels on a pipe that is not stdout, as one frame tagged with a random
per-run nonce, written only after the test code has returned normally. So:

- printing "passed" only reaches the captured output;
- exiting early (``sys.exit(0)``, ``os._exit(0)``, ``exec`` of another program)
  leaves no verdict, which the worker reads as a fail, never a pass;
- a stray write to the verdict pipe lacks the nonce and marks the run as tampered.

Candidate and tests get separate namespaces: the tests see the candidate's names
but the candidate cannot shadow the tests' builtins (``abs = lambda x: 0``).

Under the default policy (``os_only``) the candidate is unrestricted Python in this
process: the tricks above still fail, but a program written to find the nonce in
memory (walking frames up to this module) could forge a pass. The OS layers contain
it either way; the ``restricted`` policy also makes the verdict unforgeable, at the
price of refusing some correct code (see policy.py and README.md).
"""

from __future__ import annotations

import builtins
import json
import linecache
import os
import sys
import types
from typing import Any

from . import audit
from .plain import PlainChecker, UntrustedValue
from .testcode import PLAIN_NAME, TESTS_FILENAME, TICK_NAME, CompiledTests, compile_tests

CANDIDATE_NAMESPACE = "__candidate__"
CANDIDATE_FILENAME = "<candidate>"
_MAX_MESSAGE = 2000
_EARLY_EXITS = (SystemExit, KeyboardInterrupt, GeneratorExit)
#: what compiling a candidate may raise: bad syntax or a policy refusal (SyntaxError), null bytes
#: (ValueError), huge or deeply nested code (MemoryError, RecursionError)
COMPILE_ERRORS = (SyntaxError, ValueError, MemoryError, RecursionError)
#: what a verdict frame may say ("sandbox_error" only comes from the child before the run)
VERDICT_STATUSES = ("pass", "fail", "error", "memory", "refused", "test_error", "sandbox_error")


def verdict_frame(nonce: str, outcome: dict) -> bytes:
    return b"EVALYARD-VERDICT " + nonce.encode() + b"\n" + json.dumps(outcome).encode()


def parse_verdict(data: bytes, nonce: str) -> tuple[dict | None, str | None]:
    """(outcome, None) for one well-formed frame with our nonce; (None, reason) otherwise."""
    if not data:
        return None, None
    head, _, body = data.partition(b"\n")
    if head != b"EVALYARD-VERDICT " + nonce.encode():
        return None, "the verdict channel held data without the run's nonce"
    try:
        outcome = json.loads(body)
    except ValueError:
        return None, "the verdict channel held a malformed verdict"
    if not isinstance(outcome, dict) or outcome.get("status") not in VERDICT_STATUSES:
        return None, "the verdict channel held an unknown verdict"
    return outcome, None


def _safe_text(func, limit: int = _MAX_MESSAGE) -> str:
    """Call ``func`` for a message; candidate objects may raise or misbehave while being shown."""
    try:
        text = func()
        if not isinstance(text, str):
            text = "<unprintable>"
    except BaseException:  # noqa: BLE001 - anything a hostile __str__ raises
        text = "<unprintable>"
    return text if len(text) <= limit else text[:limit] + "..."


def _type_name(exc: BaseException) -> str:
    return _safe_text(lambda: type.__dict__["__name__"].__get__(type(exc)), 200)


class Harness:
    def __init__(self, job: dict, workdir: str, read_roots: list[str], tests: CompiledTests | None = None,
                 *, network_isolated: bool = True) -> None:
        self.job = job
        self.compiled_tests = tests
        self.workdir = workdir
        self.read_roots = read_roots
        self.network_isolated = network_isolated
        self.checker = PlainChecker()
        self.policy = None  # the restricted policy's guards, when that policy is in force
        self.ticks = 0
        #: file name -> source text, for quoting lines in tracebacks (split only then)
        self.sources = {TESTS_FILENAME: ""}
        # taken before candidate code runs: patching ``builtins.abs`` later cannot reach the tests
        self.test_builtins = dict(vars(builtins))
        self.copied_names: dict[str, Any] = {}

    # -- reporting helpers ------------------------------------------------
    def _traceback(self, exc: BaseException) -> list[str]:
        """Frames from candidate and test code only, with their source lines."""
        lines = []
        try:
            tb = exc.__traceback__
            while tb is not None and len(lines) < 40:
                code = tb.tb_frame.f_code
                filename = code.co_filename
                if filename in self.sources:
                    source = self.sources[filename].splitlines()
                    text = source[tb.tb_lineno - 1].strip() if 0 < tb.tb_lineno <= len(source) else ""
                    lines.append(f'{filename}:{tb.tb_lineno} in {code.co_name}: {text}')
                tb = tb.tb_next
        except BaseException:  # noqa: BLE001
            pass
        return lines[-8:]

    def _outcome(self, status: str, phase: str, message: str, exc: BaseException | None = None) -> dict:
        outcome = {"status": status, "phase": phase, "message": message, "assertions": self.ticks}
        if exc is not None:
            outcome["exception"] = _type_name(exc)
            outcome["traceback"] = self._traceback(exc)
        return outcome

    def _from_exception(self, exc: BaseException, phase: str) -> dict:
        # Built-in exception types format themselves in C; a candidate's subclass could script
        # its __str__, so those get the plain BaseException rendering of their arguments.
        name = _type_name(exc)
        builtin = getattr(builtins, name, None) is type(exc)
        text = _safe_text(lambda: str(exc) if builtin else BaseException.__str__(exc))
        if isinstance(exc, MemoryError):
            return self._outcome("memory", phase, f"MemoryError: {text}".rstrip(": "), exc)
        if isinstance(exc, UntrustedValue):
            return self._outcome("fail", phase, text, exc)
        if isinstance(exc, _EARLY_EXITS):
            return self._outcome("fail", phase, f"{name} raised before the tests completed", exc)
        if isinstance(exc, AssertionError) and phase == "tests":
            lines = self._traceback(exc)
            where = lines[-1].split(": ", 1)[-1] if lines else ""
            message = f"assertion failed: {text}" if text else f"assertion failed: {where}"
            return self._outcome("fail", phase, message, exc)
        return self._outcome("error", phase, f"{name}: {text}".rstrip(": "), exc)

    # -- the candidate -------------------------------------------------------------
    def _compile_candidate(self) -> types.CodeType | dict:
        """The candidate's code object, or the verdict when it does not compile (or is refused)."""
        source = self.job["code"]
        try:
            code = compile(source, CANDIDATE_FILENAME, "exec", dont_inherit=True)
        except COMPILE_ERRORS as exc:
            if isinstance(exc, SyntaxError):
                where = f" (line {exc.lineno})" if exc.lineno else ""
                return self._outcome("error", "compile", f"SyntaxError{where}: {exc.msg}")
            return self._from_exception(exc, "compile")
        if self.job.get("policy", "os_only") != "restricted":
            return code
        from .policy import Policy, compile_candidate

        self.policy = Policy(self.job.get("allowed_imports") or ())
        try:
            return compile_candidate(source)
        except COMPILE_ERRORS as exc:  # valid Python the policy will not run: a refusal, not an error
            self.policy.refusals.append(_safe_text(lambda: exc.msg if isinstance(exc, SyntaxError) else str(exc)))
            return self._refused("compile")

    def _refused(self, phase: str, outcome: dict | None = None) -> dict:
        refusals = self.policy.refusals
        message = f"policy refusal (restricted): {refusals[0]}"
        refused = self._outcome("refused", phase, message)
        refused["policy_refusals"] = refusals[:20]
        if outcome is not None:  # what the run would have been reported as without the refusal
            refused["outcome_without_refusal"] = {k: outcome[k] for k in ("status", "message") if k in outcome}
        return refused

    def _candidate_globals(self) -> dict:
        """A real module (``sys.modules[__candidate__]``): dataclasses, enum, pickle and typing
        look a class's module up there."""
        module = types.ModuleType(CANDIDATE_NAMESPACE)
        sys.modules[CANDIDATE_NAMESPACE] = module
        namespace = module.__dict__
        if self.policy is not None:
            self.policy.candidate_namespace(namespace, sys.stdout)
        else:
            namespace["__builtins__"] = builtins
        # tracebacks, inspect.getsource and the warnings module read candidate lines from here
        linecache.cache[CANDIDATE_FILENAME] = (len(self.job["code"]), None,
                                               self.job["code"].splitlines(True), CANDIDATE_FILENAME)
        return namespace

    def _tests_namespace(self, candidate_globals: dict, strict: bool) -> dict:
        namespace: dict[str, Any] = {}
        shadowed = vars(builtins)
        for name, value in candidate_globals.items():
            # dunder names and the restricted policy's guards stay private; builtins cannot be shadowed
            if not isinstance(name, str) or name.startswith("_") or name in shadowed:
                continue
            namespace[name] = value
        self.copied_names = dict(namespace)
        checker = self.checker

        def tick() -> None:
            self.ticks += 1

        namespace.update({
            "__name__": "__tests__",
            "__builtins__": self.test_builtins,
            PLAIN_NAME: (lambda value: checker.require(value, "a value compared by the tests")) if strict
            else (lambda value: value),
            TICK_NAME: tick,
        })
        return namespace

    # -- the run -------------------------------------------------------------
    def run(self) -> dict:
        outcome = self._run()
        if self.policy is not None and self.policy.refusals and outcome["status"] not in ("pass", "refused"):
            return self._refused(outcome.get("phase", "candidate"), outcome)
        return outcome

    def _run(self) -> dict:
        job = self.job
        strict = bool(job.get("strict_results", True))
        entry_point = job.get("entry_point") or None
        try:
            tests = self.compiled_tests or compile_tests(job.get("tests") or "", guard_comparisons=strict)
        except SyntaxError as exc:
            return self._outcome("test_error", "compile", f"the test code does not compile: {exc}")
        self.sources[TESTS_FILENAME] = tests.source
        self.sources[CANDIDATE_FILENAME] = job["code"]

        code = self._compile_candidate()
        if isinstance(code, dict):
            return code
        candidate_globals = self._candidate_globals()
        if job.get("audit_hook", True):
            audit.install(self.workdir, self.read_roots, network_isolated=self.network_isolated)

        try:
            exec(code, candidate_globals)
        except BaseException as exc:  # noqa: BLE001 - everything the candidate raises is a verdict
            return self._from_exception(exc, "candidate")

        entry = None
        if entry_point:
            entry = candidate_globals.get(entry_point)
            if entry is None:
                return self._outcome("error", "candidate", f"the candidate does not define {entry_point!r}")

        namespace = self._tests_namespace(candidate_globals, strict)
        try:
            exec(tests.code, namespace)
            check = namespace.get("check")
            # HumanEval tests define check(candidate) and leave the call to the harness; a ``check``
            # that came from the candidate's namespace is not the tests' and is never called.
            defined_by_tests = check is not None and check is not self.copied_names.get("check")
            if not tests.calls_check and defined_by_tests and type(check) is types.FunctionType:
                if entry is None:
                    return self._outcome("test_error", "tests", "the tests define check() but no entry_point is set")
                check(namespace.get(entry_point, entry))
        except BaseException as exc:  # noqa: BLE001
            return self._from_exception(exc, "tests")

        # Ran to the end. Still not a pass if a refusal was swallowed by a bare except in the tests,
        # or if the tests hold assertions and none of them executed.
        if self.checker.violation is not None:
            return self._outcome("fail", "tests", self.checker.violation)
        if tests.assert_statements and self.ticks == 0:
            return self._outcome("fail", "tests", "the tests completed without executing any assertion")
        return self._outcome("pass", "tests", "all tests passed")


def run_and_report(job: dict, workdir: str, read_roots: list[str], result_fd: int, nonce: str,
                   tests: CompiledTests | None = None, *, network_isolated: bool = True) -> None:
    """Evaluate, write the verdict, and leave at once (no atexit, no finalizers after the verdict)."""
    try:
        outcome = Harness(job, workdir, read_roots, tests, network_isolated=network_isolated).run()
    except MemoryError:
        outcome = {"status": "memory", "phase": "harness", "message": "MemoryError"}
    except BaseException as exc:  # noqa: BLE001 - e.g. RecursionError while reporting
        outcome = {"status": "error", "phase": "harness", "message": _safe_text(lambda: repr(exc))}
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - a closed or replaced stream must not cost the verdict
            pass
    data = verdict_frame(nonce, outcome)
    try:
        while data:
            written = os.write(result_fd, data)
            data = data[written:]
    finally:
        os._exit(0)
