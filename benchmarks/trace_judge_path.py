"""Which of the project's modules one judged case runs through: ``evalyard run`` of one case with
``criteria/correctness`` and a scripted judge, traced with ``sys.setprofile`` in every thread.

- modules: the project's source files (``core/evalyard``, ``plugins/*/evalyard_*``) whose functions
  run while the command runs, less ``evalyard/testing`` (the scripted model stands in for a
  provider); a module's or class body's import-time code is not counted (importing is not a step
  of the case);
- hops: the calls from a function of one of those files into another's, counted once per
  (caller, callee) pair.

The same command with ``-s exact_match`` (no judge) is traced too: what the judge adds is the
difference. Run from a checkout whose code ``python`` imports::

    python benchmarks/trace_judge_path.py
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import tempfile
import threading
from pathlib import Path


def project_file(filename: str) -> str | None:
    """``core/evalyard/x.py`` / ``plugins/p/evalyard_p/x.py`` for the project's own code, else None."""
    path = Path(filename)
    parts = path.parts
    for n, part in enumerate(parts):
        if part == "evalyard" and n and parts[n - 1] == "core" or part.startswith("evalyard_") and n > 1 \
                and parts[n - 2] == "plugins":
            relative = "/".join(parts[n - 1 if part == "evalyard" else n - 2:])
            return None if "/evalyard/testing/" in f"/{relative}" else relative
    return None


def is_function(code) -> bool:
    """A function's code (not a module's or a class body's, which run once, on import)."""
    return bool(code.co_flags & inspect.CO_NEWLOCALS)


def trace(scorer: str, workdir: Path) -> tuple[set[str], set[tuple[str, str]]]:
    from click.testing import CliRunner

    from evalyard.cli import cli

    rules = workdir / "rules.yaml"
    rules.write_text('- content: "Same facts.\\nANSWER: yes"\n')
    suite = workdir / "suite.yaml"
    suite.write_text("cases:\n  - {id: q1, input: 'Two plus two?', candidate: '4', reference: 'four'}\n")
    modules: set[str] = set()
    hops: set[tuple[str, str]] = set()

    def profile(frame, event, arg):
        if event != "call" or not is_function(frame.f_code):
            return
        callee = project_file(frame.f_code.co_filename)
        if callee is None:
            return
        modules.add(callee)
        caller = frame.f_back
        while caller is not None and (project_file(caller.f_code.co_filename) is None
                                      or not is_function(caller.f_code)):
            caller = caller.f_back  # through the standard library and other packages (asyncio, pluggy)
        if caller is not None:
            source = project_file(caller.f_code.co_filename)
            if source != callee:
                hops.add((source, callee))

    runner = CliRunner()
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        result = runner.invoke(cli, ["run", str(suite), "-s", scorer, "--judge-model", f"scripted/{rules}",
                                     "--db", f"sqlite:///{workdir / scorer.replace('/', '_')}.db", "--json"])
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    if result.exit_code != 0:
        raise SystemExit(f"{scorer}: {result.output}")
    return modules, hops


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["EVALYARD_HOME"] = tmp
        judged_modules, judged_hops = trace("criteria/correctness", Path(tmp))
        plain_modules, plain_hops = trace("exact_match", Path(tmp))
    print(json.dumps({
        "criteria/correctness": {"modules": len(judged_modules), "hops": len(judged_hops)},
        "exact_match": {"modules": len(plain_modules), "hops": len(plain_hops)},
        "the judge adds": {"modules": sorted(judged_modules - plain_modules),
                           "hops": sorted(f"{a} -> {b}" for a, b in judged_hops - plain_hops)},
    }, indent=2))


if __name__ == "__main__":
    main()
