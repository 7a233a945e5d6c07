"""Trust-Score for evalyard: refusal groundedness, answer correctness and citation quality of RAG answers."""

from .backends import Entailment, EntailmentError, register_entailment_backend
from .refusal import RefusalVerdict, register_refusal_detector

__all__ = ["Entailment", "EntailmentError", "RefusalVerdict", "register_entailment_backend",
           "register_refusal_detector"]
