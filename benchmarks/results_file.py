"""Write one benchmark's section of RESULTS.md, leaving the other sections as they are."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def write_section(title: str, body: str) -> Path:
    """Replace (or append) the ``## title`` section of RESULTS.md with ``body`` (which starts with the heading)."""
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    section = body.rstrip("\n") + "\n"
    start = text.find(f"## {title}")
    if start == -1:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        end = text.find("\n## ", start + 1)
        text = text[:start] + section + ("\n" + text[end + 1:] if end != -1 else "")
    RESULTS.write_text(text)
    return RESULTS
