"""What runs on the cluster's nodes: the node report checked before a run, and the scorer actor.

Plain Python, no Ray import at module level: the executor wraps ``ScorerWorker`` with
``ray.remote`` on the driver, and Ray ships it to the nodes by reference, so a node without
this plugin installed fails to build it with a ``ModuleNotFoundError`` naming the package.
"""

from __future__ import annotations

import hashlib
import os
import platform
import socket
from typing import Any

from evalyard import Case, Outcome, ScorerRef

#: (module, qualified name, plugin file or None), as ``evalyard.class_reference`` gives it.
Reference = tuple[str, str, "str | None"]


def load_scorer_class(reference: Reference) -> Any:
    """Import a scorer class by module and name, or from its plugin file when it came from one."""
    return ScorerRef(*reference, config={}).load_class()


def file_digest(path: str) -> str | None:
    """sha256 of a plugin file (a scorer from a file must be the same file on every node)."""
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


def installed_versions(distributions: list[str]) -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    found: dict[str, str | None] = {}
    for name in distributions:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def node_report(distributions: list[str], references: list[Reference]) -> dict[str, Any]:
    """This node's side of the pre-run check: installed versions, and whether each scorer class loads."""
    classes = {}
    for reference in references:
        try:
            load_scorer_class(reference)
            error = None
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        classes[reference[1] if reference[2] is None else reference[2]] = {
            "error": error, "digest": file_digest(reference[2]) if reference[2] else None}
    return {"host": socket.gethostname(), "python": platform.python_version(),
            "versions": installed_versions(distributions), "classes": classes}


def version_mismatches(expected: dict[str, str | None]) -> list[str]:
    found = installed_versions(list(expected))
    return [f"{name} {found[name] or 'is not installed'}" + (f" (the driver has {want})" if want else "")
            for name, want in expected.items() if found[name] != want]


class ScorerWorker:
    """One warm scorer: built once from its ``ScorerRef`` and set up with the worker's runtime
    (rebuilt from the run's settings on this node), kept for the whole run, closed at its end.

    ``score`` returns an ``Outcome`` and never raises for what the scorer does (the core's one
    mapping), so Ray never retries a scorer's own failure. Only a lost worker (process, node)
    reaches the driver as a Ray error, and the driver moves the batch.
    """

    def __init__(self, ref: ScorerRef, expected: dict[str, str | None]) -> None:
        wrong = version_mismatches(expected)
        if wrong:  # a node that joined after the pre-run check
            raise RuntimeError(f"node {socket.gethostname()}: " + ", ".join(wrong))
        self.ref = ref
        ref.start()

    def where(self) -> dict[str, Any]:
        import ray

        return {"node_id": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(),
                "pid": os.getpid()}

    def score(self, cases: list[Case]) -> Outcome:
        return self.ref.score(cases)

    def close(self) -> None:
        self.ref.close()
