"""Word primitives the stacked detector's columns share: stop words, normalisation (NFKC, case-folded, Unicode
digits as ASCII), a crude stem, the canonical value of a number word, and which words open a sentence or read as
names."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence

import numpy as np

from ragtruth_spans.data import lexicon

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

CARDINALS = {word: value for word, value in lexicon.NUMBER_WORDS.items() if 2 <= value <= 90 and word != "dozen"}
"""The spelled cardinals read as numbers (``two`` ... ``ninety``)."""
_UNITS = {word: value for word, value in lexicon.NUMBER_WORDS.items() if value <= 9}

NEGATORS = frozenset({"not", "no", "never", "nor", "without", "cannot", "neither"})
"""Negating words (contracted negations, ``isn't``, are read by their ``n't``)."""


def normalise(word: str) -> str:
    """Case-folded NFKC text with every Unicode decimal digit as its ASCII digit (``١٩٩٩`` → ``1999``)."""
    text = unicodedata.normalize("NFKC", word).casefold()
    return "".join(str(unicodedata.digit(ch)) if ch.isdigit() and unicodedata.digit(ch, None) is not None else ch
                   for ch in text)


def stem(word: str) -> str:
    """A crude suffix-stripping stem of a normalised word (plural, past, gerund, adverb, possessive); a final
    ``e`` of a longer word goes too, so a verb's base form meets its other forms.

    >>> [stem(w) for w in ("require", "requires", "required", "requiring", "opened", "free")]
    ['requir', 'requir', 'requir', 'requir', 'open', 'free']
    """
    for suffix in ("'s", "’s"):
        if word.endswith(suffix):
            word = word[: -len(suffix)]
    for suffix in ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "ly", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word[:-1] if len(word) > 4 and word.endswith("e") and not word.endswith("ee") else word


def number_value(word: str) -> str | None:
    """The canonical text of a number word (``1,200`` → ``1200``, ``3.50`` → ``3.5``, ``five`` → ``5``,
    ``twenty-one`` → ``21``), None for other words. ``one`` (more often a pronoun: ``one of them``), ``zero`` and the
    scale words (``hundred``, ``dozen``) are not read as numbers.

    >>> [number_value(w) for w in ("1,200", "3.50", "five", "twenty-one", "one", "fifth")]
    ['1200', '3.5', '5', '21', None, None]
    """
    spelled = _spelled(word)
    if spelled is not None:
        return spelled
    text = word.replace(",", "")
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    return f"{value:g}"


def _spelled(word: str) -> str | None:
    """The value of a spelled cardinal from two to ninety-nine (:data:`CARDINALS`, ``forty-two``), else None."""
    if word in CARDINALS:
        return str(CARDINALS[word])
    tens, dash, unit = word.partition("-")
    if dash and CARDINALS.get(tens, 0) >= 20 and CARDINALS[tens] % 10 == 0 and 1 <= _UNITS.get(unit, 0) <= 9:
        return str(CARDINALS[tens] + _UNITS[unit])
    return None


def scaled_value(tokens: Sequence[str], i: int) -> str | None:
    """The value of ``tokens[i]`` times the scale word after it (``1.5`` ``million`` → ``1.5e+06``, written as
    :func:`number_value` writes ``1,500,000``), else None.

    >>> scaled_value(["nine", "thousand", "journeys"], 0)
    '9000'
    """
    value = number_value(tokens[i])
    if value is None or i + 1 >= len(tokens) or tokens[i + 1] not in lexicon.SCALES:
        return None
    return f"{float(value) * lexicon.SCALES[tokens[i + 1]]:g}"


def number_phrases(tokens: Sequence[str]) -> dict[int, str]:
    """For each word of a spelled number of several words (``four hundred and fifty``, ``two thousand``, ``one
    hundred``), the whole number's value; words of no such number are left out.

    >>> number_phrases(["about", "four", "hundred", "and", "fifty", "light", "years"])
    {1: '450', 2: '450', 3: '450', 4: '450'}
    >>> number_phrases(["four", "zones", "five", "and", "six", "one", "of", "them"])
    {}
    """
    out: dict[int, str] = {}
    i = 0
    while i < len(tokens):
        end, value = _read_number(tokens, i)
        if end - i > 1 and value is not None:
            out.update({k: str(value) for k in range(i, end)})
        i = max(end, i + 1)
    return out


def _read_number(tokens: Sequence[str], i: int) -> tuple[int, int | None]:
    """``(end, value)`` of the spelled number that starts at ``tokens[i]`` (``end``: one past its last word;
    ``value`` None when none starts there): cardinals add up (``twenty`` ``five``), ``hundred`` multiplies, a scale
    word closes a group (``two thousand``), ``and`` joins a cardinal to a hundred or a scale (``four hundred and
    fifty``)."""
    j, total, current = i, 0, None
    while j < len(tokens):
        word, value = tokens[j], _spelled(tokens[j]) or ("1" if tokens[j] == "one" else None)
        if value is not None and (not current or (current % 100 == 0 and int(value) < 100)
                                  or (current % 10 == 0 and int(value) < 10)):
            current = (current or 0) + int(value)
        elif current is not None and word == "hundred":
            current *= 100
        elif current is not None and word in lexicon.SCALES:
            total, current = total + current * lexicon.SCALES[word], 0
        elif not (word == "and" and ((current is not None and current >= 100) or total)
                  and j + 1 < len(tokens) and _spelled(tokens[j + 1])):
            break
        j += 1
    return j, None if current is None else total + current


WORD = re.compile(r"\w+(?:[-'’.,/:]\w+)*")
"""A word: a run of word characters, with inner ``-``, ``'``, ``.``, ``,``, ``/`` and ``:`` kept."""


def words(text: str) -> list[tuple[int, int]]:
    """The words of ``text`` as character intervals ``[start, end)`` (see :data:`WORD`).

    >>> words("A 1,200-room hotel.")
    [(0, 1), (2, 12), (13, 18)]
    """
    return [m.span() for m in WORD.finditer(text)]


def opening_words(tokens: Sequence[str], sid: np.ndarray) -> np.ndarray:
    """Per word (``sid``: its sentence number), whether it opens a sentence or a list item: a sentence's first
    word, and the word after a one- or two-digit number that opens a sentence (``2  Season the roast``).

    >>> opening_words(["cook", "it", "2", "Season", "it", "in", "2", "Pans"], np.array([0, 0, 1, 1, 1, 1, 1, 1]))
    array([ True, False,  True,  True, False, False, False, False])
    """
    if not len(sid):
        return np.zeros(0, dtype=bool)
    first = np.r_[True, sid[1:] != sid[:-1]]
    listed = np.array([t.isdigit() and len(t) <= 2 for t in tokens], dtype=bool)
    return first | np.r_[False, (first & listed)[:-1]]


def name_like(raw: Sequence[str], tokens: Sequence[str], first_in_sentence: Sequence[bool]) -> list[bool]:
    """Per word of a context, whether it reads as a name: capitalised inside a sentence, or at a sentence start when
    the same word (``tokens``: normalised) is capitalised inside a sentence elsewhere — a sentence's first word is
    capitalised whatever it is, so ``Construction is due`` names nothing a response's ``Building`` could swap with.

    >>> name_like(["Building", "starts", "Laura", "met", "Laura"], ["building", "starts", "laura", "met", "laura"],
    ...           [True, False, True, False, False])
    [False, False, True, False, True]
    """
    inside = {t for w, t, first in zip(raw, tokens, first_in_sentence) if w[:1].isupper() and not first}
    return [w[:1].isupper() and (not first or t in inside) for w, t, first in zip(raw, tokens, first_in_sentence)]
