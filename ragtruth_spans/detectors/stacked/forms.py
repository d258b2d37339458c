"""Other forms of what a context says, which support a response's words as the context's own words would.

A context that says ``a 19-year-old forward``, ``£410m``, ``the fifth year in a row``, ``half an hour`` or
``twice as often`` supports a response's ``19``, ``410 million``, ``5th straight year``, ``30 minutes`` and
``two times``; the context's word set alone does not. :func:`context_forms` lists, for a context's normalised
tokens, the words and number values such other forms add:

- the parts of hyphenated compounds (``19-year-old`` → ``19``, ``year``, ``old``; ``6.4-kilometre`` → ``6.4``);
- numbers with a scale suffix (``410m`` → ``410``, ``410000000``; ``1.9bn``; ``5k``);
- digit and word ordinals (``5th`` ↔ ``fifth``);
- the fixed phrases of :data:`~ragtruth_spans.data.lexicon.PHRASE_FORMS` (``half an hour`` → ``30``,
  ``minutes``; ``in a row`` → ``straight``, ``consecutive``; ``twice`` → ``2``, ``two``, ``times``);
- fractions and their percentages (``a quarter`` ↔ ``25``; ``three-fifths`` ↔ ``60``);
- places and their people (``norway`` ↔ ``norwegian``, :data:`~ragtruth_spans.data.lexicon.DEMONYMS`);
- ``a.m`` and ``p.m`` wherever the context gives clock times (``"Tuesday": "10:00-18:00"``).

On the response side, :func:`response_forms` gives a word's readings looked up the same way (a compound is
supported when all its parts are; ``410m`` when a reading is).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragtruth_spans.data import lexicon
from ragtruth_spans.detectors.stacked.text import number_value

_SUFFIXED = re.compile(r"(\d+(?:[.,]\d+)*)(k|m|bn|tn)")
_SUFFIX_SCALE = {"k": 1_000, "m": 1_000_000, "bn": 1_000_000_000, "tn": 1_000_000_000_000}
_DIGIT_ORDINAL = re.compile(r"(\d+)(st|nd|rd|th)")
_CLOCK = re.compile(r"\d{1,2}:\d{2}")
CLOCK_WORDS = ("a.m", "p.m", "am", "pm")
"""What a 12-hour clock adds to a time: supported wherever the context gives clock times (``18:00``)."""


def hyphen_parts(token: str) -> list[str]:
    """The non-empty parts of a hyphenated token (``19-year-old`` → ``19``, ``year``, ``old``); ``[]`` for a
    token without a hyphen.

    >>> hyphen_parts("19-year-old"), hyphen_parts("plain")
    (['19', 'year', 'old'], [])
    """
    parts = [p for p in re.split(r"[-‐‑–]", token) if p]
    return parts if len(parts) > 1 else []


def suffixed_values(token: str) -> list[str]:
    """The readings of a number with a scale suffix: the bare number and the number times the scale
    as canonical values (:func:`~.text.number_value`: ``410m`` → ``410``, ``4.1e+08``); ``[]`` for other tokens.

    >>> suffixed_values("410m"), suffixed_values("5k"), suffixed_values("room")
    (['410', '4.1e+08'], ['5', '5000'], [])
    """
    match = _SUFFIXED.fullmatch(token)
    if match is None or (value := number_value(match.group(1))) is None:
        return []
    return [value, f"{float(value) * _SUFFIX_SCALE[match.group(2)]:g}"]


def ordinal_forms(token: str) -> list[str]:
    """The other forms of an ordinal: ``5th`` → ``5``, ``fifth``; ``fifth`` → ``5th`` (not ``5``: ``first`` and
    ``second`` are more often no number); ``[]`` otherwise.

    >>> ordinal_forms("5th"), ordinal_forms("fifth"), ordinal_forms("21st")
    (['5', 'fifth'], ['5th'], ['21'])
    """
    match = _DIGIT_ORDINAL.fullmatch(token)
    if match is not None:
        word = lexicon.ORDINAL_WORDS.get(int(match.group(1)))
        return [match.group(1), *([word] if word else [])]
    number = lexicon.ORDINAL_NUMBERS.get(token)
    return [] if number is None else [f"{number}{lexicon.ordinal_suffix(number)}"]


def fraction_forms(token: str) -> list[str]:
    """A fraction word's percentage and a percentage's fraction words (``quarter`` → ``25``; ``60`` →
    ``three-fifths``); ``[]`` otherwise.

    >>> fraction_forms("quarter"), fraction_forms("60"), fraction_forms("61")
    (['25'], ['three-fifths'], [])
    """
    if token in lexicon.FRACTIONS:
        return [str(lexicon.FRACTIONS[token])]
    return list(lexicon.FRACTIONS_OF.get(token, ()))


def phrase_forms(tokens: Sequence[str]) -> set[str]:
    """What the fixed phrases of :data:`~ragtruth_spans.data.lexicon.PHRASE_FORMS` found in ``tokens`` add; the
    longest phrase at a place wins and its words start no other (``half an hour`` is not also ``an hour``).

    >>> sorted(phrase_forms(["rest", "for", "half", "an", "hour"]))
    ['0.5', '30', 'min', 'mins', 'minutes']
    """
    out: set[str] = set()
    i = 0
    while i < len(tokens):
        found = [(phrase, forms) for phrase, forms in lexicon.PHRASES_BY_FIRST.get(tokens[i], ())
                 if tuple(tokens[i:i + len(phrase)]) == phrase]
        phrase, forms = max(found, key=lambda pair: len(pair[0]), default=((), ()))
        out.update(forms)
        i += max(len(phrase), 1)
    return out


def context_forms(tokens: Sequence[str]) -> tuple[set[str], set[str]]:
    """``(words, numbers)``: the words and the number values (canonical, :func:`~.text.number_value`) that the
    other forms of ``tokens`` (a context's normalised words) add; see the module docstring.

    >>> added, values = context_forms(["a", "19-year-old", "won", "410m", "for", "the", "fifth", "year"])
    >>> sorted(added), sorted(values)
    (['19', '4.1e+08', '410', '5th', 'old', 'year'], ['19', '4.1e+08', '410'])
    """
    out = phrase_forms(tokens)
    if any(_CLOCK.match(token) for token in tokens):
        out.update(CLOCK_WORDS)
    for token in tokens:
        out.update(hyphen_parts(token), suffixed_values(token), ordinal_forms(token), fraction_forms(token),
                   lexicon.DEMONYMS.get(token, ()))
    return out, {value for form in out if (value := number_value(form)) is not None}


def response_supported(token: str, words: frozenset[str] | set[str], numbers: frozenset[str] | set[str]) -> bool:
    """Whether a response word the context does not hold as such is supported in another form: a compound whose
    parts it holds (``fast-growing`` against ``fast growing``), a suffixed number or an ordinal whose value it
    holds (``£410m`` against ``410 million``).

    >>> response_supported("fast-growing", {"fast", "growing"}, set()), response_supported("410m", set(), {"4.1e+08"})
    (True, True)
    """
    parts = hyphen_parts(token)
    if parts and all(p in words or (number_value(p) or p) in numbers for p in parts):
        return True
    return any(v in numbers for v in suffixed_values(token)) or any(
        f in words or f in numbers for f in ordinal_forms(token))
