"""Support read from structured contexts (a JSON record, codes, clock times) for the stacked detector's columns:
the words of compound keys (``BusinessAcceptsCreditCards``), the keys whose value is true or false, region codes
(``AZ``), clock times (``8:0-20:0``). Words are the normalised tokens of :mod:`.text`."""

from __future__ import annotations

import re

from ragtruth_spans.data import lexicon
from ragtruth_spans.detectors.stacked.text import normalise, stem, words

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


def json_key_stems(context: str) -> tuple[frozenset[str], frozenset[str]]:
    """For a JSON context: stems of the words of keys whose leaf value is false, null or "no"
    (``RestaurantsReservations: false`` → ``restaurant``, ``reservation``), and of keys whose value is true;
    empty sets for any other context."""
    import json

    if not context.lstrip().startswith("{"):
        return frozenset(), frozenset()
    try:
        data = json.loads(context)
    except (ValueError, RecursionError):
        return frozenset(), frozenset()
    false_keys: set[str] = set()
    true_keys: set[str] = set()

    def visit(value: object, key: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                visit(v, f"{key} {k}")
            return
        leaf = key.split()[-1] if key.split() else key
        words_of_key = {stem(normalise(w)) for w in [*_KEY_WORD.findall(leaf), leaf]}
        if value is True or (isinstance(value, str) and value.lower() in ("yes", "true", "free")):
            true_keys.update(words_of_key)
        elif value in _FALSE_VALUES or (isinstance(value, str) and value.lower() in _FALSE_VALUES):
            false_keys.update(words_of_key)

    visit(data, "")
    return frozenset(false_keys - true_keys), frozenset(true_keys)


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
