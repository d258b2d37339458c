"""Support read from structured contexts (a JSON record, codes, clock times) for the stacked detector's columns:
the words of compound keys (``BusinessAcceptsCreditCards``), the keys whose value is true or false, region codes
(``AZ``), clock times (``8:0-20:0``). Words are the normalised tokens of :mod:`.text`."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ragtruth_spans.data import lexicon
from ragtruth_spans.data.facts import facts
from ragtruth_spans.data.hours import claim_conflicts, hours_claims
from ragtruth_spans.data.records import json_record
from ragtruth_spans.detectors.stacked.text import STOP_WORDS, normalise, number_value, stem, words

_KEY_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def compound_parts(text: str) -> frozenset[str]:
    """The normalised parts of the compound words of ``text`` — camelCase or snake_case names such as JSON keys
    (``BusinessAcceptsCreditCards`` → ``business``, ``accepts``, ``credit``, ``cards``; ``review_count`` →
    ``review``, ``count``) — which support a response's words as the words themselves would.

    >>> sorted(compound_parts('{"WheelchairAccessible": true, "review_count": 3} plain words'))
    ['accessible', 'count', 'review', 'wheelchair']
    """
    out: set[str] = set()
    for a, b in words(text):
        found = _KEY_WORD.findall(text[a:b])
        if len(found) > 1:
            out.update(normalise(part) for part in found if not part.isdigit())
    return frozenset(out)


def region_names(text: str) -> frozenset[str]:
    """The normalised words of the regions whose upper-case code stands in ``text`` as a word of its own
    (``Phoenix, AZ`` → ``arizona``; ``"state": "NY"`` → ``new``, ``york``), which support a response's words as the
    words themselves would.

    >>> sorted(region_names('{"city": "Phoenix", "state": "AZ"} in NY, or in'))
    ['arizona', 'new', 'york']
    """
    out: set[str] = set()
    for a, b in words(text):
        name = lexicon.REGION_ABBREVIATIONS.get(text[a:b])
        if name is not None:
            out.update(normalise(w) for w in name.split() if w != "and" and w != "of")
    return frozenset(out)


_FALSE_VALUES = (False, None, "no", "none", "false", "null", "")
GENERIC_KEY_WORDS = frozenset(stem(word) for word in ("business", "info", "id", "attributes"))
"""Stems of key parts that name no quantity (``business_stars``, ``review_info``): never a number's key word."""
KEY_FILLER_WORDS = GENERIC_KEY_WORDS | frozenset(stem(word) for word in (
    *STOP_WORDS, "good", "restaurants", "accepts", "allowed", "has", "take", "hour", "ambience"))
"""Stems of the parts of compound keys that say nothing of their own (``RestaurantsGoodForGroups``: only
``groups`` is asserted or denied; ``BusinessAcceptsCreditCards``: ``credit``, ``cards``), never a key's word for
``false_key`` / ``true_key`` (the whole key, ``restaurantsgoodforgroups``, still is)."""


def json_key_stems(context: str) -> tuple[frozenset[str], frozenset[str]]:
    """For a JSON context: stems of the words of keys whose leaf value is false, null or "no"
    (``RestaurantsReservations: false`` → ``restaurant``, ``reservation``), and of keys whose value is true;
    empty sets for any other context."""
    data = json_record(context)
    if data is None:
        return frozenset(), frozenset()
    false_keys: set[str] = set()
    true_keys: set[str] = set()

    def visit(value: object, key: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                visit(v, f"{key} {k}")
            return
        leaf = key.split()[-1] if key.split() else key
        words_of_key = {stem(normalise(leaf))} | {
            part for part in (stem(normalise(w)) for w in _KEY_WORD.findall(leaf)) if part not in KEY_FILLER_WORDS}
        if value is True or (isinstance(value, str) and value.lower() in ("yes", "true", "free")):
            true_keys.update(words_of_key)
        elif value in _FALSE_VALUES or (isinstance(value, str) and value.lower() in _FALSE_VALUES):
            false_keys.update(words_of_key)

    visit(data, "")
    return frozenset(false_keys - true_keys), frozenset(true_keys)


_NUMERIC = re.compile(r"\d+(?:\.\d+)?")


def json_key_numbers(context: str) -> dict[str, frozenset[str]]:
    """For a JSON context: per stem of a key's words, the numbers stated under such keys — numeric leaves
    (``"business_stars": 4.5`` gives ``star`` 4.5) and the lengths of lists (``"review_info": [3 reviews]`` gives
    ``review`` 3), as canonical values (:func:`~.text.number_value`); empty for any other context.

    >>> table = json_key_numbers('{"business_stars": 4.0, "review_info": [{"review_stars": 5}, {"review_stars": 2}]}')
    >>> sorted(table["star"]), sorted(table["review"])
    (['2', '4', '5'], ['2', '5'])
    """
    data = json_record(context)
    if data is None:
        return {}
    out: dict[str, set[str]] = {}

    def note(key: str, value: str | None) -> None:
        for part in _KEY_WORD.findall(key):
            word = stem(normalise(part))
            if value is not None and not part.isdigit() and word not in GENERIC_KEY_WORDS:
                out.setdefault(word, set()).add(value)

    def visit(value: object, key: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                visit(v, str(k))
        elif isinstance(value, list):
            note(key, str(len(value)))
            for v in value:
                visit(v, key)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            note(key, number_value(f"{value:g}"))
        elif isinstance(value, str) and _NUMERIC.fullmatch(value.strip()):
            note(key, number_value(value.strip()))

    visit(data, "")
    return {word: frozenset(values) for word, values in out.items()}


def key_number_conflicts(response: str, spans: Sequence[tuple[int, int]], stems: Sequence[str],
                         numbers: Sequence[str | None], table: dict[str, frozenset[str]],
                         markers: Sequence[bool]) -> np.ndarray:
    """1 for a response number whose neighbouring word in its sentence (the next, else the previous) names JSON
    keys (:func:`json_key_numbers`) none of which holds that number (``rated [3.5] stars`` against
    ``"business_stars": 4.5``; past a scale, the word after it: ``a rating of [4.3] out of 5 stars``); a scale
    (``out of 5``) and list markers are not read. On the pool's Data2txt training and dev responses 9 of the 12
    words it marks are hallucinated."""
    out = np.zeros(len(spans), dtype=np.float32)
    if not table:
        return out
    for j, value in enumerate(numbers):
        if value is None or markers[j] or (j >= 2 and stems[j - 2:j] == ["out", "of"]):
            continue
        scaled = stems[j + 1:j + 3] == ["out", "of"] and j + 3 < len(spans) and numbers[j + 3] is not None
        keys = [stems[k] for k in ((j + 4,) if scaled else (j + 1, j - 1)) if 0 <= k < len(spans) and stems[k] in table
                and not _SENTENCE_BREAK.search(response[min(spans[j][1], spans[k][1]):max(spans[j][0], spans[k][0])])]
        if keys and all(value not in table[key] for key in keys):
            out[j] = 1.0
    return out


def hours_conflict_words(response: str, spans: Sequence[tuple[int, int]], sentences: Sequence[tuple[int, int]],
                         hours: dict[int, str | None]) -> np.ndarray:
    """1 for the words of the times of day of each clause whose opening hours the record's ``hours`` contradict
    (:func:`~ragtruth_spans.data.hours.hours_claims`: ``closes at [9 p.m.] on Fridays`` against
    ``"Friday": "8:0-20:0"``, ``[7 am] to [3 pm] on Sundays`` against a closed Sunday); days named without times
    (``closed on Sundays``) are not read. On the pool's Data2txt training and dev responses (166 sentences state
    times, 53 of them a hallucinated one) it marks 289 words, 191 of them hallucinated."""
    out = np.zeros(len(spans), dtype=np.float32)
    if not hours:
        return out
    starts = np.asarray([a for a, _ in spans])
    ends = np.asarray([b for _, b in spans])
    for a, b in sentences:
        text = response[a:b]
        for claim in hours_claims(text):
            if claim.hours is None or not any(claim_conflicts(hours, claim)):
                continue
            for fact in (f for f in facts(text[claim.start:claim.end]) if f.kind == "time"):
                at = a + claim.start
                out[(starts < at + fact.end) & (ends > at + fact.start)] = 1.0
    return out


_SENTENCE_BREAK = re.compile(r"[.;:!?\n]")
_CLOCK = re.compile(r"(\d{1,2}):(\d{1,2})")


def clock_values(token: str) -> set[str]:
    """The hours of the clock times in a word, on the 24- and the 12-hour clock (``8:0-20:0`` → ``8``, ``20``,
    ``8``; ``17:30`` → ``17``, ``5``, ``30``), so ``until 8 p.m.`` finds ``20:0``.

    >>> sorted(clock_values("8:0-20:0"), key=int)
    ['0', '8', '20']
    """
    out: set[str] = set()
    for hour, minute in _CLOCK.findall(token):
        h = int(hour)
        out |= {str(h), str(int(minute))} | ({str(h - 12)} if 12 < h < 24 else set())
    return out
