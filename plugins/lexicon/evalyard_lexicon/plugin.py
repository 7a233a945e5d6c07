"""The evalyard plugin entry point (``[project.entry-points.evalyard] lexicon``)."""

from evalyard import hookimpl

from .error_rate import CharacterErrorRate, WordErrorRate
from .exact_match import ExactMatch
from .readability import Readability
from .specificity import Specificity
from .word_count_match import WordCountMatch

SCORERS = (ExactMatch, WordCountMatch, Readability, Specificity, WordErrorRate, CharacterErrorRate)


@hookimpl
def register_settings(register):
    register("nltk_data", list, [], env="NLTK_DATA",
             help="folders holding NLTK's data (punkt_tab, averaged_perceptron_tagger_eng, cmudict) for compat modes")


@hookimpl
def register_scorers(register):
    for scorer in SCORERS:
        register(scorer)
