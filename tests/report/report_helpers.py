"""Helpers shared by the report tests (a module of its own: every folder's conftest is named `conftest`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from testutil import ROOT


def evalyard(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "evalyard"
    return subprocess.run([str(exe), *args], env=env, capture_output=True, text=True, cwd=ROOT, timeout=600)
