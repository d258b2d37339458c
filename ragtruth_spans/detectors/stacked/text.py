"""Word primitives the stacked detector's columns share: stop words, normalisation (NFKC, case-folded, Unicode
digits as ASCII), a crude stem, and the canonical value of a number word."""

from __future__ import annotations

import math
import re
import unicodedata

STOP_WORDS = frozenset({
    "a", "an", "the", "and", "or", "but", "if", "of", "to", "in", "on", "at", "by", "for", "with", "from", "as",
    "is", "are", "was", "were", "be", "been", "being", "it", "its", "this", "that", "these", "those", "there",
    "here", "he", "she", "they", "them", "his", "her", "their", "we", "our", "you", "your", "i", "me", "my",
    "not", "no", "yes", "do", "does", "did", "has", "have", "had", "will", "would", "can", "could", "should",
    "may", "might", "must", "also", "than", "then", "so", "such", "very", "more", "most", "other", "into",
    "about", "over", "after", "before", "which", "who", "whom", "whose", "what", "when", "where", "why", "how",
    "all", "any", "each", "both", "few", "many", "much", "some", "only", "own", "same", "just", "while",
    "during", "under", "above", "between", "out", "up", "down", "off", "again", "further", "once", "s", "t",
})

NEGATORS = frozenset({"not", "no", "never", "nor", "without", "cannot", "neither"})
"""Negating words (contracted negations, ``isn't``, are read by their ``n't``)."""


def normalise(word: str) -> str:
    """Case-folded NFKC text with every Unicode decimal digit as its ASCII digit (``١٩٩٩`` → ``1999``)."""
    text = unicodedata.normalize("NFKC", word).casefold()
    return "".join(str(unicodedata.digit(ch)) if ch.isdigit() and unicodedata.digit(ch, None) is not None else ch
                   for ch in text)


def stem(word: str) -> str:
    """A crude suffix-stripping stem of a normalised word (plural, past, gerund, adverb, possessive)."""
    for suffix in ("'s", "’s"):
        if word.endswith(suffix):
            word = word[: -len(suffix)]
    for suffix in ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "ly", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def number_value(word: str) -> str | None:
    """The canonical text of a number word (``1,200`` → ``1200``, ``3.50`` → ``3.5``), None for other words."""
    text = word.replace(",", "")
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    return f"{value:g}"


WORD = re.compile(r"\w+(?:[-'’.,/:]\w+)*")
"""A word: a run of word characters, with inner ``-``, ``'``, ``.``, ``,``, ``/`` and ``:`` kept."""


def words(text: str) -> list[tuple[int, int]]:
    """The words of ``text`` as character intervals ``[start, end)`` (see :data:`WORD`).

    >>> words("A 1,200-room hotel.")
    [(0, 1), (2, 12), (13, 18)]
    """
    return [m.span() for m in WORD.finditer(text)]
