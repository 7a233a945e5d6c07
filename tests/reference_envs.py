"""Separate virtual environments holding a reference package (inspect_ai, ...) whose numbers a
parity test compares with evalyard's, when the package cannot share evalyard's environment
(inspect-ai 0.3.285 pins an older fsspec than the test environment's). Built once from PyPI
into ``.venvs/`` at the repository's root (git-ignored), under a file lock so pytest-xdist workers
wait for one build; a failed build raises, so the parity test fails rather than skips.

``make test`` builds them all before pytest starts (``python tests/reference_envs.py``), so the
test run times the tests, not pip; a test run without it builds each the first time it is asked for."""

from __future__ import annotations

import concurrent.futures
import fcntl
import json
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Every reference venv a parity test asks for (through ``reference_python(*REFERENCES[name])``).
REFERENCES = {
    "inspect": ("inspect-ai==0.3.285",),
    "agentevals": ("agentevals==0.0.9",),
    # langchain-community 0.4.2 (released after ragas 0.4.3) dropped ``chat_models.vertexai``, which
    # ragas 0.4.3 imports, so the one before is pinned; rapidfuzz is Ragas' optional dependency for
    # its string distances.
    "ragas": ("ragas==0.4.3", "langchain-community==0.4.1", "rapidfuzz==3.14.6"),
    # the references of the reviewers' agreement figures: Cohen's and Fleiss' kappa, and alpha
    "raters": ("statsmodels==0.15.0", "krippendorff==0.9.0"),
    "jiwer": ("jiwer==4.0.0",),
}


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


def build_all() -> None:
    """Build every venv of ``REFERENCES`` that is missing or out of date, side by side (pip spends
    most of its time waiting on downloads and file writes)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(REFERENCES)) as pool:
        for python in pool.map(lambda pins: reference_python(*pins), REFERENCES.values()):
            print(f"reference venv ready: {python.parent.parent.relative_to(ROOT)}")


if __name__ == "__main__":
    build_all()
