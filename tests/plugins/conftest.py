"""Plugin families are tested as users get them: installed, through their entry points."""

import os
from pathlib import Path

import pytest

# Where the user installed the local models, read at import: the tests' own fixtures point
# EVALYARD_HOME at a temp dir later.
_USER_MODELS = os.environ.get("EVALYARD_MODELS_DIR") or None
_USER_HOME = os.environ.get("EVALYARD_HOME") or None


def user_models_dir() -> Path:
    if _USER_MODELS:
        return Path(_USER_MODELS)
    from evalyard.settings import Settings

    return Settings(home=Path(_USER_HOME) if _USER_HOME else None).data_dir() / "models"


@pytest.fixture(scope="session")
def user_models() -> Path:
    """The user's models directory (read only), for fixtures that hand it to other processes."""
    return user_models_dir()


@pytest.fixture(autouse=True)
def _installed_plugins(installed_plugins):
    pass


@pytest.fixture
def qwen_models(monkeypatch):
    """The user's models directory holding qwen2.5-coder-1.5b (used read only), or a skip saying
    how to install it."""
    directory = user_models_dir()
    if not (directory / "qwen2.5-coder-1.5b.gguf").is_file():
        pytest.skip("qwen2.5-coder-1.5b is not installed: run `evalyard models install qwen2.5-coder-1.5b`")
    monkeypatch.setenv("EVALYARD_MODELS_DIR", str(directory))
    return directory
