"""``evalyard testset generate``: test sets from a team's documents (chunks, questions, checks)."""

from pathlib import Path

#: The plugin's prompt templates (``retrieval/testset_question`` ...), overridable by a user's own.
TEMPLATE_DIR = Path(__file__).parent.parent / "templates"
