"""Separate virtual environments holding a reference package (inspect_ai, ...) whose numbers a
parity test compares with evalyard's, when the package cannot share evalyard's environment
(inspect-ai 0.3.285 pins an older fsspec than the test environment's). Built once from PyPI
into ``.venvs/`` at the repository's root, under a file lock so pytest-xdist workers wait for
one build; a failed build raises, so the parity test fails rather than skips."""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def reference_python(requirement: str, *pins: str) -> Path:
    """The python of a venv with ``requirement`` (``name==version``) installed, and ``pins``
    beside it: versions of its dependencies it needs that pip would not choose by itself (one
    released after it that breaks it). A venv built with other pins is built again."""
    home = ROOT / ".venvs" / requirement.replace("==", "-")
    python = home / "bin" / "python"
    stamp = home / ".installed"
    wanted = " ".join((requirement, *pins))
    home.parent.mkdir(exist_ok=True)
    with open(home.parent / f".{home.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.exists() or stamp.read_text() != wanted:
            venv.EnvBuilder(with_pip=True, clear=True).create(home)
            subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                            requirement, *pins], check=True, timeout=900)
            stamp.write_text(wanted)
    return python


def run_reference(python: Path, script: str, data) -> object:
    """Run ``script`` in the reference venv with ``data`` as JSON on stdin; its JSON stdout."""
    done = subprocess.run([str(python), "-c", script], input=json.dumps(data), capture_output=True, text=True,
                          timeout=600, check=False)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise RuntimeError(f"reference script failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout)
