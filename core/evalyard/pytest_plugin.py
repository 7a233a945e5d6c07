"""evalyard's pytest plugin (entry point ``pytest11``): evaluations as tests.

Fixtures:

- ``evalyard_db``: a temporary SQLite database (its URL), also set as ``EVALYARD_DB`` with a
  temporary ``EVALYARD_HOME``, so nothing touches the user's own runs;
- ``evalyard_store``: an open ``Store`` on that database;
- ``evalyard_run``: ``evalyard_run(SUITE, scorers=[...], args=[...])`` runs a suite through the
  real ``evalyard run`` command and returns an :class:`EvalRun`;
- ``evalyard_scripted_model``: ``evalyard_scripted_model(RULES)`` writes rules for the scripted
  model (``evalyard.testing.scripted``) and returns its model string, ``scripted/PATH``.

And an assertion helper, importable from here::

    from evalyard.pytest_plugin import assert_scores

    def test_quality(evalyard_run):
        run = evalyard_run("suite.yaml")
        assert_scores(run, exact_match=">=0.8", hedging_language="<0.3", word_count_match="pass_rate>=0.9")

pytest loads this module in every session of an environment where evalyard is installed, so
it imports nothing heavy until a fixture is used.
"""

from __future__ import annotations

import json
import operator
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import pytest

_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "==": operator.eq, "!=": operator.ne,
}
_CHECK = re.compile(r"^\s*(?:(?P<stat>[a-z_0-9]+)\s*)?(?P<op>>=|<=|==|!=|>|<)\s*(?P<number>[-+0-9.eE]+)\s*$")


class EvalRunError(Exception):
    """``evalyard run`` refused the suite (bad usage or bad input, exit code 2)."""


@dataclass
class EvalRun:
    """One run made by the ``evalyard_run`` fixture."""

    id: str
    name: str
    suite: str
    status: str
    exit_code: int
    stats: dict[str, dict[str, Any]]
    failed_checks: list[dict[str, Any]] = field(default_factory=list)
    db: str = ""

    def results(self, scorer: str | None = None) -> list[Any]:
        """This run's result rows (case_id, scorer, value, label, passed, details, error, ...)."""
        from evalyard.store import Store

        store = Store(self.db)
        try:
            return list(store.results(self.id, scorer))
        finally:
            store.close()


def _stats_of(run: Any) -> dict[str, dict[str, Any]]:
    if isinstance(run, EvalRun):
        return run.stats
    if isinstance(run, dict):  # the JSON of `evalyard run --json`, or a run's totals
        return run.get("scorers") or {}
    totals = getattr(run, "totals", None)  # a stored run row
    if isinstance(totals, dict):
        return totals.get("scorers") or {}
    raise TypeError(f"assert_scores needs a run (EvalRun, run row or run JSON), got {type(run).__name__}")


def assert_scores(run: Any, **checks: str | float) -> None:
    """Assert scorer statistics of ``run``; every failing check is reported at once.

    Each keyword names a scorer; its value is ``"OP NUMBER"`` on the mean (``">=0.8"``,
    ``"< 0.3"``), ``"STAT OP NUMBER"`` on another statistic (``"pass_rate>=0.9"``,
    ``"errors==0"``), or a bare number, meaning the mean is at least that.
    """
    stats = _stats_of(run)
    problems = []
    for scorer, check in checks.items():
        if isinstance(check, (int, float)):
            stat, op, target = "mean", ">=", float(check)
        else:
            match = _CHECK.match(str(check))
            if not match:
                raise ValueError(f"assert_scores({scorer}={check!r}): expected e.g. '>=0.8' or 'pass_rate>=0.9'")
            stat, op, target = match["stat"] or "mean", match["op"], float(match["number"])
        if scorer not in stats:
            problems.append(f"{scorer}: not part of this run (scorers: {', '.join(stats) or 'none'})")
            continue
        if stat not in stats[scorer]:
            problems.append(f"{scorer}: no statistic {stat!r} (has: {', '.join(stats[scorer])})")
            continue
        actual = stats[scorer][stat]
        if actual is None or not _OPERATORS[op](actual, target):
            problems.append(f"{scorer}: {stat} is {actual if actual is None else f'{actual:.4g}'}, expected {op} {target:g}")
    if problems:
        raise AssertionError("scores missed their checks:\n  " + "\n  ".join(problems))


@pytest.fixture
def evalyard_db(tmp_path_factory, monkeypatch) -> str:
    """A temporary database's URL, also the default for everything evalyard opens in the test."""
    home = tmp_path_factory.mktemp("evalyard-home")
    url = f"sqlite:///{home / 'evalyard.db'}"
    monkeypatch.setenv("EVALYARD_HOME", str(home))
    monkeypatch.setenv("EVALYARD_DB", url)
    return url


@pytest.fixture
def evalyard_store(evalyard_db):
    from evalyard.store import Store

    store = Store(evalyard_db)
    yield store
    store.close()


@pytest.fixture
def evalyard_run(evalyard_db) -> Callable[..., EvalRun]:
    """Run a suite through the real ``evalyard run`` command, in this process."""
    from click.testing import CliRunner

    from evalyard.cli import cli

    def run(suite: str | Path, scorers: Sequence[str] = (), args: Sequence[str] = (), name: str = "") -> EvalRun:
        argv = ["run", str(suite), "--json", "--db", evalyard_db]
        for scorer in scorers:
            argv += ["--scorer", scorer]
        if name:
            argv += ["--name", name]
        argv += list(args)
        result = CliRunner().invoke(cli, argv, catch_exceptions=False)
        if result.exit_code not in (0, 1):
            raise EvalRunError(f"evalyard {' '.join(argv)} exited {result.exit_code}:\n{result.output}")
        try:
            data = json.loads(result.stdout)
        except ValueError:
            raise EvalRunError(f"evalyard {' '.join(argv)} printed no run:\n{result.output}") from None
        return EvalRun(id=data["run_id"], name=data["name"], suite=data["suite"], status=data["status"],
                       exit_code=result.exit_code, stats=data["scorers"], failed_checks=data.get("failed_checks") or [],
                       db=evalyard_db)

    return run


@pytest.fixture
def evalyard_scripted_model(tmp_path) -> Callable[..., str]:
    """``make(rules, name="model")``: write rules for the scripted model and return
    ``scripted/PATH``, the model string judges and generators take."""
    try:
        from evalyard.testing.scripted import load_rules
    except ImportError as exc:
        pytest.skip(f"the scripted model is not available: {exc}")

    def make(rules: Sequence[dict[str, Any]], name: str = "model") -> str:
        path = tmp_path / f"scripted-{name}.jsonl"
        path.write_text("".join(json.dumps(rule, ensure_ascii=False) + "\n" for rule in rules), encoding="utf-8")
        load_rules(path)  # a bad rule fails here, naming the rule, not inside a run
        return f"scripted/{path}"

    return make
