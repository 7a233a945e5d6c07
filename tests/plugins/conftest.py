"""Plugin families are tested as users get them: installed, through their entry points."""

from pathlib import Path

import pytest

from evalyard.settings import Settings

# Where the user installed the local models, read at import: the root conftest points every
# test at an empty models directory of its own later.
_USER_MODELS = Settings.from_env().local_models_dir()


def user_models_dir() -> Path:
    return _USER_MODELS


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
