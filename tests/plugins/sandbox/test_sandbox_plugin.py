"""Registration, configuration and the pass@k estimator (no sandbox worker needed)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from itertools import combinations

import pytest

from evalyard import ConfigError, Scorer
from evalyard.scoring import describe_config

import evalyard_sandbox.plugin as plugin
from evalyard_sandbox.passk import pass_at_k
from evalyard_sandbox.scorer import PythonUnitTesting


def test_hookimpl_registers_python_unit_testing():
    registered: list = []
    plugin.register_scorers(register=registered.append)
    assert registered == [PythonUnitTesting]
    cls = registered[0]
    assert issubclass(cls, Scorer) and cls.name == "python_unit_testing" and cls.description
    assert cls.labels == ("pass", "fail", "error", "timeout", "memory", "refused")
    assert cls.threshold == 1.0 and cls.higher_is_better and cls.executor == "thread"
    assert all(row["help"] for row in describe_config(cls.Config))


def test_entry_point_is_declared():
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group="evalyard") if ep.name == "sandbox"]
    if not found:
        pytest.skip("evalyard-sandbox is not installed (pip install -e plugins/sandbox)")
    assert found[0].value == "evalyard_sandbox.plugin"


def test_registry_lists_the_scorer_through_the_entry_point():
    from importlib.metadata import entry_points

    if not [ep for ep in entry_points(group="evalyard") if ep.name == "sandbox"]:
        pytest.skip("evalyard-sandbox is not installed")
    from evalyard import Application

    assert Application().registry.scorer("sandbox/python_unit_testing") is PythonUnitTesting


def test_the_platform_process_stays_light():
    # Listing scorers starts nothing; making a scorer starts nothing either (no side effect in a
    # constructor); a run's set-up starts its worker in the background, and RestrictedPython is
    # only ever imported there, never in the platform process.
    probe = (
        "import sys, json; import evalyard_sandbox.plugin as p\n"
        "from evalyard.scoring import describe_config; describe_config(p.PythonUnitTesting.Config)\n"
        "listed = 'evalyard_sandbox.client' in sys.modules\n"
        "s = p.PythonUnitTesting(); idle = s._client is None\n"
        "s.setup(None); started = s._client._process is not None\n"
        "from evalyard import Case\n"
        "label = s.score_batch([Case(id='1', candidate='x = 1', metadata={'unit_tests': 'assert x == 1'})])[0].label\n"
        "s.close()\n"
        "print(json.dumps([listed, idle, started, label, 'RestrictedPython' in sys.modules]))"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    output = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    assert json.loads(output.stdout) == [False, True, True, "pass", False]


def test_required_fields_depend_on_a_suite_level_default():
    assert PythonUnitTesting().required_fields() == ("metadata.unit_tests",)
    assert PythonUnitTesting(unit_tests="assert True").required_fields() == ()


@pytest.mark.parametrize("values, message", [
    ({"k": []}, "k must be"), ({"k": [0]}, "k must be"), ({"timeout": 0}, "timeout"),
    ({"memory_mb": 1}, "memory_mb"), ({"policy": "none"}, "must be one of"), ({"workers": -1}, "workers"),
    ({"max_open_files": 2}, "max_open_files"), ({"bogus": 1}, "unknown config option"),
])
def test_bad_config_is_one_clear_error(values, message):
    with pytest.raises(ConfigError, match=message):
        PythonUnitTesting.make_config(values)


def test_config_from_cli_strings():
    config = PythonUnitTesting.make_config({"k": "1|10|100", "timeout": "2.5", "policy": "os_only",
                                            "audit_hook": "false", "allowed_imports": "fnmatch"})
    assert config.k == [1, 10, 100] and config.timeout == 2.5 and config.policy == "os_only"
    assert config.audit_hook is False and config.allowed_imports == ["fnmatch"]


def _pass_at_k_by_enumeration(n: int, c: int, k: int) -> float:
    """The definition: the share of k-subsets of the n samples that contain a passing one."""
    samples = [True] * c + [False] * (n - c)
    subsets = list(combinations(range(n), k))
    return sum(any(samples[i] for i in subset) for subset in subsets) / len(subsets)


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_pass_at_k_matches_its_definition(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(_pass_at_k_by_enumeration(n, c, k), abs=1e-12)


def test_pass_at_k_closed_form_and_edges():
    assert pass_at_k(200, 13, 1) == pytest.approx(13 / 200)
    assert pass_at_k(200, 13, 100) == pytest.approx(1 - math.comb(187, 100) / math.comb(200, 100))
    assert pass_at_k(10, 0, 5) == 0.0 and pass_at_k(10, 10, 1) == 1.0 and pass_at_k(10, 6, 5) == 1.0
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)


def test_aggregate_gives_the_dataset_pass_at_k():
    """The corpus-level metric (called once per run with all the scorer's Scores, errors included)."""
    from evalyard import Score

    scorer = PythonUnitTesting.__new__(PythonUnitTesting)  # aggregate needs the config, not a worker
    scorer.config = PythonUnitTesting.make_config({"k": "1|10"})

    def sampled(n: int, c: int) -> Score:
        estimates = {str(k): pass_at_k(n, c, k) for k in (1, 10) if k <= n}
        return Score(value=estimates["1"], label="fail", details={"n": n, "c": c, "pass_at_k": estimates})

    scores = [
        sampled(10, 3), sampled(10, 10), sampled(5, 1),  # the last has no pass@10 (k > n)
        Score(value=1.0, label="pass", details={}),  # a single candidate: its value for every k
        Score.failure("the test code does not compile"),  # errors are left out
        Score(value=None, label="refused", error="policy refusal (restricted): import of 'os'"),
    ]
    result = scorer.aggregate(scores)
    assert result["cases_scored"] == 4
    assert result["pass@1"] == pytest.approx((0.3 + 1.0 + 0.2 + 1.0) / 4)
    assert result["pass@10"] == pytest.approx((1.0 + 1.0 + 1.0) / 3)
    assert scorer.aggregate([Score.failure("x")]) == {"cases_scored": 0}
