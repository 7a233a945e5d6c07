"""Sphinx configuration: MyST Markdown pages, the Furo theme, sphinx-click for the commands and
evalyard_reference (docs/_ext) for the reference generated from the code. Nothing is fetched:
the build works offline, and `make docs` turns every warning into a failure."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

from evalyard import __version__  # noqa: E402

project = "evalyard"
author = "the evalyard developers"
copyright = "the evalyard developers"
release = version = __version__

extensions = ["myst_parser", "sphinx_click", "evalyard_reference"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "screenshots/README*", "transcripts"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

html_theme = "furo"
html_title = f"evalyard {release}"
html_static_path: list[str] = []
# No request leaves the page but for its own files: no fonts, analytics or edit links.
html_theme_options = {"navigation_with_keys": True}

# Offline: no intersphinx inventories, no link checks at build time.
intersphinx_mapping: dict = {}
nitpicky = False

# Options and commands are shown as typed: `--judge-model` must not become an en dash.
smartquotes = False
