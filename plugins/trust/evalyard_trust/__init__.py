"""Trust-Score for evalyard: refusal groundedness, answer correctness and citation quality of RAG answers."""

from .backends import Entailment, EntailmentError
from .refusal import RefusalVerdict

__all__ = ["Entailment", "EntailmentError", "RefusalVerdict"]
