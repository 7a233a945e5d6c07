"""Which of the project's modules one judged case runs through: ``evalyard run`` with
``criteria/correctness`` and a scripted judge, traced with ``sys.setprofile`` in every thread.

Two figures, both counted on the project's source files (``core/evalyard``,
``plugins/*/evalyard_*``, less ``evalyard/testing``: the scripted model stands in for a provider;
a module's or class body's import-time code is not counted, importing is not a step of a case):

- the whole command (one case): modules = files whose functions run; hops = distinct (caller
  file, callee file) pairs of calls between them. Start-up, the registry, the store's set-up and
  the summary are all in it, whatever the case;
- per case: the same suite with one case and with two, each in a fresh process; modules = files
  holding a function that is called more often with two cases, hops = (caller file, callee file)
  pairs called more often. What runs once per run drops out: what is left is the work one more
  case costs, from reading its line to storing its score.

The same is done with ``-s exact_match`` (no judge): what the judge adds is the difference. Run
from a checkout whose code ``python`` imports::

    python benchmarks/trace_judge_path.py
"""

from __future__ import annotations

import inspect
import json
import os
import pickle
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

SCORERS = ("criteria/correctness", "exact_match")


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


def trace(scorer: str, cases: int, workdir: Path) -> tuple[Counter, Counter]:
    """Calls per function and per (caller function, callee function) of one ``evalyard run``."""
    from click.testing import CliRunner

    from evalyard.cli import cli

    rules = workdir / "rules.yaml"
    rules.write_text('- content: "Same facts.\\nANSWER: yes"\n')
    suite = workdir / "suite.yaml"
    suite.write_text("cases:\n" + "".join(
        f"  - {{id: q{n}, input: 'Two plus two, case {n}?', candidate: '4', reference: 'four'}}\n"
        for n in range(cases)))
    calls: Counter = Counter()
    edges: Counter = Counter()

    def function(code) -> tuple[str, int, str]:
        return project_file(code.co_filename), code.co_firstlineno, code.co_name

    def profile(frame, event, arg):
        if event != "call" or not is_function(frame.f_code) or project_file(frame.f_code.co_filename) is None:
            return
        callee = function(frame.f_code)
        calls[callee] += 1
        caller = frame.f_back
        while caller is not None and (project_file(caller.f_code.co_filename) is None
                                      or not is_function(caller.f_code)):
            caller = caller.f_back  # through the standard library and other packages (asyncio, pluggy)
        if caller is not None:
            edges[function(caller.f_code), callee] += 1

    runner = CliRunner()
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        result = runner.invoke(cli, ["run", str(suite), "-s", scorer, "--judge-model", f"scripted/{rules}",
                                     "--db", f"sqlite:///{workdir / 'runs.db'}", "--json"])
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    if result.exit_code != 0:
        raise SystemExit(f"{scorer}: {result.output}")
    return calls, edges


def traced(scorer: str, cases: int) -> tuple[Counter, Counter]:
    """``trace`` in a fresh process, so every thread (the model layer's loop too) starts traced."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "trace.pickle"
        env = {**os.environ, "EVALYARD_HOME": tmp}
        subprocess.run([sys.executable, __file__, "--one", scorer, str(cases), str(out)], env=env, check=True)
        return pickle.loads(out.read_bytes())


def figures(calls: Counter, edges: Counter) -> tuple[set[str], set[tuple[str, str]]]:
    modules = {function[0] for function in calls}
    hops = {(caller[0], callee[0]) for caller, callee in edges if caller[0] != callee[0]}
    return modules, hops


def grown(more: Counter, fewer: Counter) -> Counter:
    return Counter({key: n - fewer.get(key, 0) for key, n in more.items() if n > fewer.get(key, 0)})


def measure(scorer: str) -> dict[str, tuple[set[str], set[tuple[str, str]]]]:
    calls1, edges1 = traced(scorer, 1)
    calls2, edges2 = traced(scorer, 2)
    return {"whole command": figures(calls1, edges1),
            "per case": figures(grown(calls2, calls1), grown(edges2, edges1))}


def main() -> None:
    if sys.argv[1:2] == ["--one"]:
        scorer, cases, out = sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
        out.write_bytes(pickle.dumps(trace(scorer, cases, out.parent)))
        return
    measured = {scorer: measure(scorer) for scorer in SCORERS}
    report: dict = {}
    for what in ("whole command", "per case"):
        report[what] = {scorer: {"modules": len(modules), "hops": len(hops), "modules_list": sorted(modules),
                                 "hops_list": sorted(f"{a} -> {b}" for a, b in hops)}
                        for scorer, (modules, hops) in ((s, measured[s][what]) for s in SCORERS)}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
