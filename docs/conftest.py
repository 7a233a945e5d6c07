"""The documentation's Python examples run as tests (Sybil collects the ```python blocks of every
page; the blocks of one page share a namespace, in page order). Each page runs in a scratch
directory holding a link to the repository's `examples/`, with a data directory of its own and the
installed plugins, as a reader who cloned the repository would run it. A block that is not meant
to run (it calls a hosted model, say) is preceded by `<!-- skip: next -->`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sybil import Sybil
from sybil.parsers.myst import PythonCodeBlockParser, SkipParser

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def docs_sandbox(tmp_path, monkeypatch):
    """A reader's scratch directory: `examples/` at hand, a data directory of its own."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVALYARD_HOME", str(tmp_path / "evalyard-home"))
    monkeypatch.setenv("EVALYARD_MODELS_DIR", str(tmp_path / "evalyard-models"))
    for variable in ("EVALYARD_DB", "EVALYARD_LOAD_PLUGINS", "EVALYARD_BLOCK_PLUGINS", "EVALYARD_EXTRA_PLUGINS",
                     "EVALYARD_JUDGE_MODEL"):
        monkeypatch.delenv(variable, raising=False)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return tmp_path


pytest_collect_file = Sybil(
    parsers=[PythonCodeBlockParser(), SkipParser()],
    patterns=["*.md"],
    excludes=["_build/*"],
    fixtures=["docs_sandbox"],
).pytest()
