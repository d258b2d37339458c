"""Comparisons the response's own numbers contradict: ``A checked bag costs 25 euros, which is [more expensive] than
the 40 euros charged at the airport``, ``Students pay $8, four dollars [more] than the standard $12 ticket``.

A comparative (``more``, ``lower``, ``cheaper``; ``more``/``less`` before a price adjective: ``more expensive``,
``less affordable``) followed by ``than`` and, within :data:`AFTER_THAN` words, a number is checked against the
nearest number before it in the same sentence (the one before a difference, ``four dollars more than``, when a number
stands right before the comparative with no comma between); both must carry the same unit — a currency sign before the
number, a ``%`` after it, or the word after it (``euros``, ``km``; a sign read as its unit word, units compared by
sense: :data:`SIGNS`) — else nothing is judged. A comparison the two values contradict marks its comparative words.
Nothing here reads the context: the numbers disagree with the response's own words, whatever the context says.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragtruth_spans.data import lexicon
from ragtruth_spans.detectors.stacked import text

HIGHER = frozenset({"more", "higher", "greater", "bigger", "larger", "longer", "older", "heavier", "dearer", "costlier",
                    "pricier", "taller", "faster", "later"})
LOWER = frozenset({"less", "lower", "fewer", "smaller", "shorter", "younger", "lighter", "cheaper", "slower",
                   "earlier"})
PRICE_ADJECTIVES = {"expensive": 1, "costly": 1, "pricey": 1, "affordable": -1}
"""``more``/``less`` + one of these compares prices (sign: what ``more`` means for the price)."""
SIGNS = {"$": "dollars", "€": "euros", "£": "pounds", "¥": "yen", "%": "percent"}
"""A sign before (``%``: after) a number, read as its unit word; two unit words agree when equal, of one
:mod:`~ragtruth_spans.data.lexicon` sense (``euro``/``euros``, ``km``/``kilometres``) or of one stem."""
SCALES = {"thousand": 1e3, "million": 1e6, "m": 1e6, "billion": 1e9, "bn": 1e9}
COMPARATIVES = HIGHER | LOWER
QUANTIFYING = frozenset({"or", "and", "nor"})
"""Before a comparative these (and negators) make it a bound, not a comparison: ``no more than``, ``or more than``."""
AFTER_THAN = 3
"""The number compared with must stand within this many words after ``than``."""
BEFORE = 10
"""The number compared must stand within this many words before the comparative."""


def reversed_by_numbers(response: str, spans: Sequence[tuple[int, int]], tokens: Sequence[str],
                        sid: np.ndarray) -> np.ndarray:
    """Per word (``spans``: character intervals ``[start, end)`` of ``response``; ``tokens`` their normalised text;
    ``sid`` their sentence ids), 1.0 on the comparative words of a comparison its numbers contradict.

    >>> from ragtruth_spans.detectors.stacked.text import normalise, words
    >>> def marked(s):
    ...     spans = words(s)
    ...     found = reversed_by_numbers(s, spans, [normalise(s[a:b]) for a, b in spans], np.zeros(len(spans), int))
    ...     return [s[a:b] for (a, b), m in zip(spans, found) if m]
    >>> marked("A bag costs 25 euros online, more expensive than the 40 euros at the airport.")
    ['more', 'expensive']
    >>> marked("Students pay $16, four dollars more than the standard $12 ticket.")
    []
    >>> marked("In 1990, more than 2,000 people lived there.")
    []
    >>> marked("Reduce the entrance to 1 inch, then widen it to no more than 3 inches.")
    []
    """
    out = np.zeros(len(tokens), dtype=np.float32)
    for i in range(len(tokens)):
        comparison = _comparison(tokens, i)
        if comparison is None:
            continue
        direction, last = comparison
        after = _number_after(response, spans, tokens, sid, last + 1)
        before = _number_before(response, spans, tokens, sid, i)
        if after is None or before is None or not _same_unit(after[1], before[1]):
            continue
        if (before[0] - after[0]) * direction <= 0:
            out[i:last] = 1.0
    return out


def _comparison(tokens: Sequence[str], i: int) -> tuple[int, int] | None:
    """``(direction, index of "than")`` of a comparative at ``i`` (+1: the first value is the larger), else None."""
    token = tokens[i]
    if i and (tokens[i - 1] in QUANTIFYING or tokens[i - 1] in text.NEGATORS):  # "no more than 3 inches"
        return None
    if token in ("more", "less") and i + 2 < len(tokens) and tokens[i + 1] in PRICE_ADJECTIVES \
            and tokens[i + 2] == "than":
        return PRICE_ADJECTIVES[tokens[i + 1]] * (1 if token == "more" else -1), i + 2
    if i + 1 < len(tokens) and tokens[i + 1] == "than" and token in COMPARATIVES:
        return (1 if token in HIGHER else -1), i + 1
    return None


def _number_after(response: str, spans: Sequence[tuple[int, int]], tokens: Sequence[str], sid: np.ndarray,
                  start: int) -> tuple[float, str] | None:
    for k in range(start, min(start + AFTER_THAN, len(tokens))):
        if sid[k] != sid[start - 1]:
            return None
        value = _valued(response, spans, tokens, k)
        if value is not None:
            return value
    return None


def _number_before(response: str, spans: Sequence[tuple[int, int]], tokens: Sequence[str], sid: np.ndarray,
                   at: int) -> tuple[float, str] | None:
    """The value and unit compared at the comparative ``at``: the nearest number before it in its sentence, or,
    when that one is a difference right before the comparative (``four dollars more``, no comma between), the number
    before that."""
    found = [k for k in range(max(at - BEFORE, 0), at) if sid[k] == sid[at] and text.number_value(tokens[k])]
    if not found:
        return None
    nearest = found[-1]
    between = response[spans[nearest][1]:spans[at][0]]
    if at - nearest <= 2 and not any(mark in between for mark in ",;:("):  # a difference: "four dollars more than"
        earlier = [k for k in found[:-1] if nearest - k <= BEFORE]
        return _valued(response, spans, tokens, earlier[-1]) if earlier else None
    return _valued(response, spans, tokens, nearest)


def _valued(response: str, spans: Sequence[tuple[int, int]], tokens: Sequence[str], k: int
            ) -> tuple[float, str] | None:
    """The value of the number word ``k`` (times a scale word after it) and its unit, None without a unit."""
    canonical = text.number_value(tokens[k])
    if canonical is None:
        return None
    value, unit_at = float(canonical), k + 1
    if unit_at < len(tokens) and tokens[unit_at] in SCALES:
        value, unit_at = value * SCALES[tokens[unit_at]], unit_at + 1
    start, end = spans[k]
    sign = response[start - 1:start] if start else ""
    if sign in SIGNS:
        return value, SIGNS[sign]
    if response[end:end + 1] == "%":
        return value, "percent"
    if unit_at < len(tokens) and tokens[unit_at].isalpha() and tokens[unit_at] not in text.STOP_WORDS \
            and tokens[unit_at] not in COMPARATIVES:
        return value, tokens[unit_at]
    return None


def _same_unit(a: str, b: str) -> bool:
    return a == b or lexicon.same_sense(a, b) or text.stem(a) == text.stem(b)
