"""Fixtures for the checklist plugin's tests: scripted rule files (the fake server is used as a context manager)."""

from __future__ import annotations

import os


os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
