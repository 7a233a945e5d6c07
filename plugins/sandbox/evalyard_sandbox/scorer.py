"""``python_unit_testing``: run candidate code against unit tests in the sandbox; pass@k over samples."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from evalyard import Case, Score, Scorer

from .passk import pass_at_k

if TYPE_CHECKING:
    from evalyard import Runtime

#: "refused": the restricted policy would not run the program -- a scorer error, never a 0
LABELS = ("pass", "fail", "error", "timeout", "memory", "refused")
#: statuses that mean the platform could not judge the code: a Score.failure, never a 0
_INFRASTRUCTURE = ("sandbox_error", "test_error", "refused")


@dataclass
class Config:
    unit_tests: str | None = field(default=None, metadata={
        "help": "test code for cases without metadata.unit_tests (a suite-level default)"})
    entry_point: str | None = field(default=None, metadata={
        "help": "function the tests' check(candidate) receives, for cases without metadata.entry_point"})
    k: list[int] = field(default_factory=lambda: [1], metadata={
        "help": "pass@k values to report over metadata.samples; the score's value is pass@k[0]"})
    timeout: float = field(default=3.0, metadata={"help": "wall-clock seconds per sample (CPU limit: the next whole second)"})
    memory_mb: int = field(default=512, metadata={"help": "address space a sample may add to the worker's"})
    policy: Literal["os_only", "restricted"] = field(default="os_only", metadata={
        "help": "os_only: any Python, contained by the OS layers; restricted: also RestrictedPython "
                "(refuses some correct code: reported as 'refused', a scorer error)"})
    audit_hook: bool = field(default=True, metadata={
        "help": "runtime tripwire turning attempts to leave the sandbox (processes, signals, ctypes, files "
                "outside the run directory) into clear errors"})
    strict_results: bool = field(default=True, metadata={
        "help": "refuse non-plain values (always-equal objects) on either side of the tests' comparisons"})
    allowed_imports: list[str] = field(default_factory=list, metadata={
        "help": "extra modules the restricted policy may import (standard library only)"})
    workers: int = field(default=0, metadata={"help": "samples run at once (0: one per CPU)"})
    max_output_bytes: int = field(default=8192, metadata={"help": "stdout+stderr kept per sample (the rest is dropped)"})
    max_file_bytes: int = field(default=1 << 20, metadata={"help": "largest file a sample may write"})
    max_open_files: int = field(default=32, metadata={"help": "open file descriptors per sample"})
    scratch_mb: int = field(default=64, metadata={"help": "size of the private tmpfs holding the runs' directories"})
    namespaces: bool = field(default=True, metadata={
        "help": "use Linux namespaces and the filesystem jail where the kernel allows (false: rlimits and uid only)"})

    def __post_init__(self) -> None:
        if not self.k or any(k < 1 for k in self.k):
            raise ValueError("k must be a non-empty list of positive integers")
        if self.timeout <= 0:
            raise ValueError("timeout must be positive")
        if self.memory_mb < 16:
            raise ValueError("memory_mb must be at least 16")
        if self.workers < 0:
            raise ValueError("workers must be 0 (one per CPU) or more")
        if min(self.max_output_bytes, self.max_file_bytes, self.scratch_mb) < 0 or self.max_open_files < 8:
            raise ValueError("limits must be non-negative (max_open_files at least 8)")


def _layers(isolation: dict, config: Config) -> list[str]:
    layers = ["fork-per-sample", "rlimits", "process-group-kill", "empty-workdir", "output-cap"]
    for key, name in (("mount_jail", "filesystem-jail"), ("network_namespace", "network-namespace"),
                      ("ipc_namespace", "ipc-namespace"), ("user_namespace", "user-namespace"),
                      ("pid_namespace_per_run", "pid-namespace"), ("process_filter", "no-fork-seccomp")):
        if isolation.get(key):
            layers.append(name)
    if isolation.get("run_uid_base") is not None:
        layers.append("unprivileged-uid-per-slot")
    if config.policy == "restricted":
        layers.append("restricted-python")
    if config.audit_hook:
        layers.append("audit-hook")
    if config.strict_results:
        layers.append("plain-data")
    return layers


class PythonUnitTesting(Scorer):
    name = "python_unit_testing"
    description = (
        "Runs candidate Python against unit tests (HumanEval check(candidate) or plain asserts) in a "
        "layered sandbox; pass/fail/error/timeout/memory, pass@k over metadata.samples."
    )
    requires = ("metadata.unit_tests",)
    # the code comes from ``candidate`` or ``metadata.samples`` (checked per case), so the candidate
    # is read when present: an extraction (`--extract code`) applies to it
    reads = ("candidate",)
    version = "1"
    higher_is_better = True
    labels = LABELS
    threshold = 1.0
    executor = "thread"  # score_batch runs samples concurrently in the sandbox worker's children
    batch_size = 512
    Config = Config

    def __init__(self, config: Any = None, **options: Any) -> None:
        super().__init__(config, **options)
        self._client = None
        self._client_lock = threading.Lock()
        #: the worker's PATH: the application's ``sandbox.path`` (set by ``setup``)
        self.child_path: str | None = None

    def setup(self, runtime: Runtime) -> None:
        if runtime is not None:  # set up by hand (tests): the default PATH
            self.child_path = runtime.setting("sandbox.path")
        # Start the worker when a run sets the scorer up (never in the constructor, so making a
        # scorer has no side effect): its start-up then overlaps the rest of the run's set-up
        # (opening the database...). close() stops it; a worker process that scores without a
        # setup starts it on its first batch.
        try:
            self._sandbox().start()
        except OSError:
            pass  # reported by the first score_batch instead

    def required_fields(self) -> tuple[str, ...]:
        # Candidate code comes from ``candidate`` or ``metadata.samples``; checked per case in score_batch.
        return () if self.config.unit_tests else ("metadata.unit_tests",)

    def resources(self) -> dict[str, float]:
        # A worker on a cluster (evalyard-ray) runs `workers` programs at once: it asks for that many CPUs.
        return {"cpu": self.config.workers} if self.config.workers else {}

    # -- the sandbox --------------------------------------------------------------
    def _sandbox(self):
        with self._client_lock:
            if self._client is None:
                from .client import SandboxClient

                self._client = SandboxClient(
                    slots=self.config.workers or os.cpu_count() or 1,
                    namespaces=self.config.namespaces,
                    scratch_mb=self.config.scratch_mb,
                    restricted=self.config.policy == "restricted",
                    path=self.child_path,
                )
            return self._client

    def close(self) -> None:
        with self._client_lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    # -- scoring ----------------------------------------------------------------------
    def _job(self, code: str, tests: str, entry_point: str | None) -> dict:
        c = self.config
        return {
            "code": code, "tests": tests, "entry_point": entry_point, "policy": c.policy,
            "audit_hook": c.audit_hook, "strict_results": c.strict_results,
            "allowed_imports": list(c.allowed_imports), "timeout": c.timeout, "memory_mb": c.memory_mb,
            "max_output_bytes": c.max_output_bytes, "max_file_bytes": c.max_file_bytes,
            "max_open_files": c.max_open_files,
        }

    def _plan(self, case: Case) -> tuple[list[str], str, str | None]:
        """(samples, tests, entry point) for a case; ValueError says what is missing."""
        samples = case.metadata.get("samples")
        if samples is not None:
            # metadata.samples replaces candidate: the samples are the n generations of pass@k
            if not isinstance(samples, list) or not samples or not all(isinstance(s, str) for s in samples):
                raise ValueError("metadata.samples must be a non-empty list of code strings")
        elif case.candidate is not None:
            samples = [case.candidate]
        else:
            raise ValueError("the case has neither candidate nor metadata.samples")
        tests = case.metadata.get("unit_tests", self.config.unit_tests)
        if isinstance(tests, list) and all(isinstance(t, str) for t in tests):
            tests = "\n\n".join(tests)
        if not isinstance(tests, str) or not tests.strip():
            raise ValueError("no unit tests: set metadata.unit_tests or the scorer's unit_tests")
        entry_point = case.metadata.get("entry_point") or self.config.entry_point
        if entry_point is not None and not isinstance(entry_point, str):
            raise ValueError("metadata.entry_point must be a function name")
        return samples, tests, entry_point

    def score_batch(self, cases: list[Case]) -> list[Score]:
        plans: list[tuple[int, int, bool] | Score] = []
        jobs: list[dict] = []
        for case in cases:
            try:
                samples, tests, entry_point = self._plan(case)
            except ValueError as exc:
                plans.append(Score.failure(str(exc)))
                continue
            plans.append((len(jobs), len(samples), "samples" in case.metadata))
            jobs.extend(self._job(code, tests, entry_point) for code in samples)
        try:
            client = self._sandbox()
            results = client.run_many(jobs) if jobs else []
        except Exception as exc:  # the worker could not start: an error for every case, never a 0
            return [p if isinstance(p, Score) else Score.failure(exc) for p in plans]
        layers = _layers(client.isolation, self.config)
        scores = []
        for plan in plans:
            if isinstance(plan, Score):
                scores.append(plan)
                continue
            start, count, from_samples = plan
            outcome = results[start:start + count]
            scores.append(self._samples(outcome, layers) if from_samples else self._single(outcome[0], layers))
        return scores

    def _single(self, result: dict, layers: list[str]) -> Score:
        status = result.get("status")
        details = {key: value for key, value in result.items() if key != "status"}
        details["sandbox"] = {"policy": self.config.policy, "layers": layers}
        if status == "refused":
            return Score(value=None, label="refused", error=result.get("message"), details=details)
        if status in _INFRASTRUCTURE or status not in LABELS:
            return Score.failure(result.get("message") or f"sandbox status {status!r}", **details)
        value = 1.0 if status == "pass" else 0.0
        return Score(value=value, label=status, passed=value >= self.threshold, details=details)

    def _samples(self, results: list[dict], layers: list[str]) -> Score:
        broken = [r for r in results if r.get("status") in _INFRASTRUCTURE or r.get("status") not in LABELS]
        per_sample = [{"label": r.get("status"), "message": r.get("message"), "elapsed_s": r.get("elapsed_s")}
                      for r in results]
        if broken:
            # one unjudgeable sample makes the estimate wrong: report, do not guess
            failure = Score.failure(broken[0].get("message") or "a sample could not be run", samples=per_sample)
            if any(r.get("status") == "refused" for r in broken):
                failure.label = "refused"
            return failure
        n = len(results)
        c = sum(r["status"] == "pass" for r in results)
        estimates = {str(k): pass_at_k(n, c, k) for k in self.config.k if k <= n}
        primary = self.config.k[0]
        counts: dict[str, int] = {}
        for r in results:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        details = {"n": n, "c": c, "pass_at_k": estimates, "labels": counts, "samples": per_sample,
                   "sandbox": {"policy": self.config.policy, "layers": layers}}
        if primary > n:
            return Score.failure(f"pass@{primary} needs at least {primary} samples, the case has {n}", **details)
        value = estimates[str(primary)]
        if c == n:
            label = "pass"
        elif c > 0:
            label = "fail"
        else:  # nothing passed: the most common way the samples failed
            label = max(counts, key=lambda name: (counts[name], -LABELS.index(name)))
        return Score(value=value, label=label, passed=value >= self.threshold, details=details)

    # -- the corpus ----------------------------------------------------------------
    def aggregate(self, scores: list[Score]) -> dict[str, float]:
        """The dataset's pass@k for each configured k: the mean over the cases scored without error
        of each case's pass@k (a case without samples counts its value for every k)."""
        scored = [s for s in scores if s.error is None and s.value is not None]
        result: dict[str, float] = {}
        for k in self.config.k:
            values = []
            for score in scored:
                estimates = score.details.get("pass_at_k")
                if estimates is None:
                    values.append(score.value)
                elif str(k) in estimates:  # k > n has no estimate for that case
                    values.append(estimates[str(k)])
            if values:
                result[f"pass@{k}"] = sum(values) / len(values)
        result["cases_scored"] = float(len(scored))
        return result
