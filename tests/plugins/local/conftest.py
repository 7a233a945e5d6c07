"""Local-model fixtures. The named models are real files: smollm2-135m from its installed
package, qwen2.5-coder-1.5b from the models directory the user installed it into (read only;
the tests' own data directory is a fresh temp dir)."""

from __future__ import annotations


import pytest

@pytest.fixture(autouse=True)
def _only_this_plugin(_installed_plugins, monkeypatch):
    """Load this plugin through its entry point, and no other (others are tested on their own)."""
    monkeypatch.setenv("EVALYARD_LOAD_PLUGINS", "local")


@pytest.fixture
def temp_models(tmp_path, monkeypatch):
    """An empty models directory of this test's own."""
    directory = tmp_path / "models"
    directory.mkdir()
    monkeypatch.setenv("EVALYARD_MODELS_DIR", str(directory))
    return directory
