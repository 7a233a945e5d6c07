"""Shared fixtures: every test gets its own data directory and database.

The suite has two tiers. The fast one (``make test-fast``) leaves out every test marked with one
of ``FULL_TIER_MARKERS``; the full one (``make test``) runs everything. The markers are added here
from the fixtures a test uses, so a new test that starts PostgreSQL, a Ray cluster, Chromium or a
real local model is put in the full tier without anyone remembering to mark it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from testutil import TESTS

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Under pytest-xdist every worker loads its own copy of a local model: each gets its share of the
# cores. Left to the load average (which lags a minute behind), a model loaded while the machine
# is still quiet takes every core and then spins against the other workers for the whole session.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    os.environ.setdefault("EVALYARD_LOCAL_THREADS", str(max(1, len(os.sched_getaffinity(0))
                                                             // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))))

#: The markers of the full tier, with what they mean (registered in pytest_configure below).
FULL_TIER_MARKERS = {
    "local_model": "runs a real local model file (smollm2-135m or qwen2.5-coder-1.5b) in process",
    "ray": "starts or uses a real multi-node Ray cluster on this machine",
    "postgres": "needs a real PostgreSQL server (started by the tests, skipped with the reason when absent)",
    "browser": "drives a real headless Chromium (skipped, with the reason, when absent)",
    "slow": "end-to-end tests taking minutes: real models, many calls or large corpora",
}

#: A fixture that brings in a real service or model -> the marker of the tests that use it
#: (directly or through other fixtures).
MARKER_OF_FIXTURE = {
    "qwen_models": "local_model",
    "smol_path": "local_model",
    "ray_cluster": "ray",
    "postgres_server": "postgres",
    "chromium": "browser",
    "inspect_python": "slow",  # builds a venv with inspect-ai from PyPI the first time
    "agentevals_python": "slow",  # builds a venv with agentevals from PyPI the first time
    "ragas_python": "slow",  # builds a venv with ragas from PyPI the first time
    "raters_python": "slow",  # builds a venv with statsmodels and krippendorff from PyPI the first time
}

#: The markers of tests that take up to minutes each, scheduled first (pytest_collection_modifyitems).
LONG_MARKERS = ("local_model", "slow")

#: Under pytest-xdist (``--dist loadgroup``) the tests sharing an expensive session fixture run
#: in one worker, so that fixture starts once: marker or fixture -> group, first match wins.
XDIST_GROUPS = (
    ("ray", "ray"),
    ("postgres", "postgres"),
    ("browser", "report"),
    ("runs", "report"),  # tests/report: the quickstart runs made once by the real CLI
)


def pytest_configure(config):
    for name, meaning in FULL_TIER_MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {meaning}")
    config.addinivalue_line("markers", "serial: changes the shared environment (the installed packages), or "
                                       "measures wall-clock limits another worker would disturb: never run beside "
                                       "other tests, so the Makefile runs these after the rest")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        for fixture, marker in MARKER_OF_FIXTURE.items():
            if fixture in fixtures and item.get_closest_marker(marker) is None:
                item.add_marker(marker)
        if item.get_closest_marker("xdist_group") is None:
            for name, group in XDIST_GROUPS:
                if item.get_closest_marker(name) is not None or name in fixtures:
                    item.add_marker(pytest.mark.xdist_group(group))
                    break
    # Long tests first: pytest-xdist hands tests out in this order (after the groups), so the real
    # models' minute-long tests start early and the run ends on short ones, not on one worker
    # finishing a long test alone while the other idles.
    items.sort(key=lambda item: not any(item.get_closest_marker(marker) for marker in LONG_MARKERS))


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """Point EVALYARD_HOME at a temp dir so no test touches the user's database, give it an
    empty models directory (``qwen_models`` lends the user's installed ones), and load no
    installed entry-point plugins unless a test asks for them (``installed_plugins``)."""
    home = tmp_path / "evalyard-home"
    monkeypatch.setenv("EVALYARD_HOME", str(home))
    monkeypatch.setenv("EVALYARD_MODELS_DIR", str(tmp_path / "evalyard-models"))
    monkeypatch.delenv("EVALYARD_DB", raising=False)
    for variable in ("EVALYARD_BLOCK_PLUGINS", "EVALYARD_EXTRA_PLUGINS", "EVALYARD_TRACE_PLUGINS"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("EVALYARD_LOAD_PLUGINS", "")
    return home


@pytest.fixture(scope="session")
def inspect_python():
    """The python of a venv with the real inspect-ai package (``tests/reference_envs.py``)."""
    from reference_envs import REFERENCES, reference_python

    return reference_python(*REFERENCES["inspect"])


@pytest.fixture(scope="session")
def agentevals_python():
    """The python of a venv with LangChain's agentevals 0.0.9 (``tests/reference_envs.py``)."""
    from reference_envs import REFERENCES, reference_python

    return reference_python(*REFERENCES["agentevals"])


@pytest.fixture(scope="session")
def ragas_python():
    """The python of a venv with Ragas 0.4.3 (``tests/reference_envs.py``)."""
    from reference_envs import REFERENCES, reference_python

    return reference_python(*REFERENCES["ragas"])


@pytest.fixture(scope="session")
def raters_python():
    """The python of a venv with statsmodels (Cohen's and Fleiss' kappa) and krippendorff (alpha),
    the references of the reviewers' agreement figures (neither is a dependency of evalyard)."""
    from reference_envs import REFERENCES, reference_python

    return reference_python(*REFERENCES["raters"])


@pytest.fixture
def installed_plugins(monkeypatch):
    """Load the installed entry-point plugins (lexicon, embedding, sandbox ...) as users get them."""
    monkeypatch.delenv("EVALYARD_LOAD_PLUGINS", raising=False)


@pytest.fixture
def app(isolated_home):
    """A fresh application for this test, configured from the (isolated) environment."""
    from evalyard import Application

    return Application()


@pytest.fixture
def scripted_plugin(app):
    """The application with the scripted test scorers registered as a plugin."""
    import scripted_scorers

    app.register_plugin(scripted_scorers, name="scripted_scorers")
    return app


@pytest.fixture
def rules(evalyard_scripted_model):
    """``rules(rule_list)``: scripted-model rules in a file of their own, returns ``scripted/PATH``
    (the pytest plugin's ``evalyard_scripted_model``, which also checks the rules)."""
    counter = iter(range(1_000_000))
    return lambda rule_list, name=None: evalyard_scripted_model(rule_list, name=name or f"rules{next(counter)}")


@pytest.fixture
def cli_env(isolated_home):
    """Environment for running the real `evalyard` console script in a subprocess."""
    env = dict(os.environ)
    env["EVALYARD_HOME"] = str(isolated_home)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["EVALYARD_EXTRA_PLUGINS"] = "scripted_scorers"
    return env


@pytest.fixture
def evalyard_exe():
    exe = Path(sys.executable).parent / "evalyard"
    if not exe.exists():
        pytest.skip("the evalyard console script is not installed in this environment")
    return str(exe)


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL server for the whole session, or a skip that says why not."""
    from postgres_server import PostgresServer, Unavailable

    try:
        server = PostgresServer()
        server.start()
    except Unavailable as exc:
        print(f"\nPostgreSQL tests skipped: {exc}")
        pytest.skip(f"PostgreSQL unavailable: {exc}")
    yield server
    server.stop()


_db_counter = iter(range(1_000_000))


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request, tmp_path):
    """Each store test runs against SQLite and against a real PostgreSQL server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    server = request.getfixturevalue("postgres_server")
    return server.create_database(f"evalyard_test_{next(_db_counter)}")
