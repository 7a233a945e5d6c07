"""evalyard-lexicon: scorers that need no model.

``exact_match``, ``word_count_match``, ``readability`` and ``specificity``, each
with an ``arthur_compat`` switch that reproduces Arthur Bench 0.3.1's values. The
scorer modules import nothing heavy at import time: wordfreq, the syllable
dictionaries and (in compat mode only) NLTK load on first use.
"""

from .exact_match import ExactMatch
from .readability import Readability
from .specificity import Specificity
from .word_count_match import WordCountMatch

__version__ = "0.1.0"

__all__ = ["ExactMatch", "Readability", "Specificity", "WordCountMatch", "__version__"]
