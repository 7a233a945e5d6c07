"""Counting proper nouns and numbers without NLTK data: a documented heuristic.

Arthur Bench counted tokens that NLTK's POS tagger tags NNP (singular proper noun)
or CD (cardinal number). That needs tagger data the platform cannot download, so
the default specificity scorer uses this rule-based count instead. It works on
whitespace-separated tokens with surrounding punctuation removed
(``"(Paris),"`` -> ``Paris``); tokens without a letter or digit are ignored, so
curly quotes and emoji never count (NLTK tags curly quotes NNP).

A token counts once, as

1. a **number** if it contains a digit (``1969``, ``3.107``, ``$4.2B``, ``12%``,
   ``Q3``, ``20th``) or is a cardinal number word (``seven``, ``hundred``,
   ``million``);
2. a **proper noun** if it starts with an upper-case letter and is not the
   pronoun ``I`` (or ``I'm``, ``I've``...), and either

   - it is not at the start of a sentence (the first token, a token after one
     ending in ``.``, ``!`` or ``?`` - except after titles such as ``Dr.`` and
     single initials such as ``J.`` - or the first token on a new line), or
   - at a sentence start, it is an acronym or has inner capitals (``NASA``,
     ``HyperText``), or the same word also appears capitalised mid-sentence, or
     the text is a bare name: it has no lower-case word at all (``Paris``,
     ``Jane Austen``) and the word is not a common function word or
     interjection (``Yes``, ``The``);

3. a proper noun too if it starts lower-case but has capitals inside
   (``iPhone``, ``eBay``).

Known limits: sentence-initial names in ordinary prose ("Paris is...") are missed
unless repeated mid-sentence; capitalised words in titles and headings are
counted; spelled-out ordinals and fractions are not numbers.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\S+")
_EDGE_PUNCTUATION = re.compile(r"^[\W_]+|[\W_]+$")
_DIGIT = re.compile(r"\d")

NUMBER_WORDS = frozenset(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy "
    "eighty ninety hundred thousand million billion trillion dozen".split()
)

#: Words that start sentences or stand alone without being names; used only by
#: the bare-name rule, where every word is capitalised.
COMMON_CAPITALISED = frozenset(
    """a an the this that these those it its he she they we you i me my our your their his her
    them us there here what who whom whose which where when why how is are was were be been
    am do does did can could will would shall should may might must have has had not no yes
    ok okay sure hi hello hey dear thanks thank please sorry well oh and or but so if then
    also however yet for of in on at to by with from as about into over under after before
    all any some each every both none many much more most other such only just very
    true false maybe perhaps correct incorrect""".split()
)

#: Tokens after which a full stop does not end the sentence.
_NON_TERMINAL_ABBREVIATIONS = frozenset(
    "mr. mrs. ms. dr. prof. st. sr. jr. mt. vs. e.g. i.e. no. fig. gen. col. lt. sgt. rev. hon.".split()
)


def _ends_sentence(token: str) -> bool:
    stripped = token.rstrip("\"'”’)]}»")
    if not stripped or stripped[-1] not in ".!?":
        return False
    if stripped[-1] == ".":
        lowered = stripped.lower()
        if lowered in _NON_TERMINAL_ABBREVIATIONS:
            return False
        if len(stripped) == 2 and stripped[0].isupper():  # an initial: "J. K. Rowling"
            return False
    return True


def _is_pronoun_i(word: str) -> bool:
    return word == "I" or (len(word) > 2 and word[0] == "I" and word[1] in "'’")


def count_proper_nouns_and_numbers(text: str) -> int:
    """The number of tokens in ``text`` that look like proper nouns or numbers."""
    # One pass to classify tokens; sentence-initial capitalised words are decided
    # after it, because two of their rules look at the whole text.
    count = 0
    undecided: list[str] = []
    mid_sentence_capitalised: set[str] = set()
    has_lowercase_word = False
    at_sentence_start = True
    previous_end = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if text.find("\n", previous_end, match.start()) != -1:
            at_sentence_start = True
        previous_end = match.end()
        word = _EDGE_PUNCTUATION.sub("", token)
        if not word:  # a dash, quote or emoji between words keeps the sentence state
            at_sentence_start = at_sentence_start or _ends_sentence(token)
            continue
        starts_sentence = at_sentence_start
        at_sentence_start = _ends_sentence(token)
        if _DIGIT.search(word):
            count += 1
            continue
        first = word[0]
        if not first.isupper():
            if first.isalpha():
                has_lowercase_word = True
            lowered = word.lower()
            if lowered in NUMBER_WORDS:
                count += 1
            elif lowered != word:  # inner capitals: iPhone
                count += 1
            continue
        if word.lower() in NUMBER_WORDS:
            count += 1
        elif _is_pronoun_i(word):
            continue
        elif not starts_sentence:
            count += 1
            mid_sentence_capitalised.add(word)
        elif word[1:] != word[1:].lower():  # acronym or inner capitals
            count += 1
        else:
            undecided.append(word)
    for word in undecided:
        if word in mid_sentence_capitalised:
            count += 1
        elif not has_lowercase_word and word.lower() not in COMMON_CAPITALISED:
            count += 1
    return count
