"""Map generated span texts back to character offsets of the response.

Offsets are characters of ``response`` (Python ``str`` indices, i.e. code points), half-open ``[start, end)``;
every aligned span satisfies ``span.text == response[span.start:span.end]``.

Items are aligned in order; each is tried with three methods, the first that succeeds wins:

1. ``exact``: ``response.find(text)`` from the end of the previous aligned span, then from the start of the
   response. A phrase that occurs several times therefore maps to the occurrence that follows the previous item
   (the generated list is in order of appearance).
2. ``normalized``: the same search, case-insensitive (``str.casefold``), with every run of whitespace read as
   one space, leading/trailing whitespace ignored, per-character NFKC and typographic quotes/dashes read as
   ASCII. Matches are mapped back to the exact original offsets through a per-character index map.
3. ``fuzzy``: :func:`rapidfuzz.fuzz.partial_ratio_alignment` on the normalized texts, after the previous span
   first, then anywhere; accepted when the score is at least ``fuzzy_threshold`` (default
   :data:`FUZZY_THRESHOLD` = 90, on rapidfuzz's 0-100 scale), then boundaries refined by a few characters to
   maximise :func:`rapidfuzz.fuzz.ratio` and trimmed of surrounding whitespace. This catches a typo or a
   changed character in a long span; short spans (a handful of characters) practically need an exact match.

An item that none of these places is returned in :attr:`Alignment.unaligned` (its generated text) and counted;
it is never dropped silently.
"""

from __future__ import annotations

import unicodedata
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field

from rapidfuzz import fuzz

from ragtruth_spans.core.types import Span
from ragtruth_spans.detectors.shared.parsing import ParsedItem

FUZZY_THRESHOLD: float = 90.0
"""Minimum rapidfuzz ``partial_ratio`` score (0-100) to accept a fuzzy alignment."""

_ASCII_PUNCT = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
                              "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
                              "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-",
                              "\u2212": "-", "\u00a0": " "})


@dataclass
class Alignment:
    """Aligned spans (in the order of the items), how each was found, which item each came from, and the texts
    that were not found."""

    spans: list[Span] = field(default_factory=list)
    methods: list[str] = field(default_factory=list)  # "exact" | "normalized" | "fuzzy", one per span
    item_indices: list[int] = field(default_factory=list)  # index in ``items`` of each span's item
    unaligned: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Normalized:
    """A normalized string and, for each of its characters, the original ``[start, end)`` it came from (a base
    character with its combining marks is one unit, so NFC and NFD spellings normalize alike)."""

    text: str
    index: list[int]
    ends: list[int]

    def to_original(self, start: int, end: int) -> tuple[int, int]:
        """Original ``[start, end)`` covering normalized ``[start, end)`` (``end > start``)."""
        return self.index[start], self.ends[end - 1]

    def from_original(self, offset: int) -> int:
        """First normalized position whose original index is ``>= offset``."""
        return bisect_left(self.index, offset)


def _clusters(text: str) -> list[tuple[int, int]]:
    """``[start, end)`` of each base character with the combining marks that follow it."""
    out: list[tuple[int, int]] = []
    for i, char in enumerate(text):
        if out and unicodedata.combining(char) and not text[i - 1].isspace():
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i, i + 1))
    return out


def normalize(text: str) -> _Normalized:
    """Casefold, NFKC and ASCII-quote each character cluster (base + combining marks: ``é`` composed or not reads
    the same), collapse whitespace runs to one space, keep an index map."""
    chars: list[str] = []
    index: list[int] = []
    ends: list[int] = []
    previous_space = False
    for start, end in _clusters(text):
        cluster = text[start:end]
        if cluster.isspace():
            if not previous_space:
                chars.append(" ")
                index.append(start)
                ends.append(end)
            previous_space = True
            continue
        previous_space = False
        for out in unicodedata.normalize("NFKC", cluster.translate(_ASCII_PUNCT)).casefold():
            chars.append(out)
            index.append(start)
            ends.append(end)
    return _Normalized("".join(chars), index, ends)


def align_spans(response: str, items: Sequence[ParsedItem], *,
                fuzzy_threshold: float = FUZZY_THRESHOLD) -> Alignment:
    """Align each generated item to ``response``; see the module docstring for the rules."""
    result = Alignment()
    norm_response: _Normalized | None = None  # built lazily: most items match exactly
    cursor = 0
    for index, item in enumerate(items):
        found = _find_exact(response, item.text, cursor)
        method = "exact"
        if found is None:
            norm_response = norm_response or normalize(response)
            found = _find_normalized(norm_response, item.text, cursor)
            method = "normalized"
        if found is None:
            found = _find_fuzzy(response, norm_response, item.text, cursor, fuzzy_threshold)
            method = "fuzzy"
        if found is None:
            result.unaligned.append(item.text)
            continue
        start, end = found
        result.spans.append(Span(start, end, type=item.type, text=response[start:end]))
        result.methods.append(method)
        result.item_indices.append(index)
        cursor = end
    return result


def _find_exact(response: str, text: str, cursor: int) -> tuple[int, int] | None:
    if not text:
        return None
    for origin in (cursor, 0):
        pos = response.find(text, origin)
        if pos >= 0:
            return pos, pos + len(text)
    return None


def _find_normalized(norm_response: _Normalized, text: str, cursor: int) -> tuple[int, int] | None:
    needle = normalize(text).text.strip()
    if not needle:
        return None
    for origin in (norm_response.from_original(cursor), 0):
        pos = norm_response.text.find(needle, origin)
        if pos >= 0:
            return norm_response.to_original(pos, pos + len(needle))
    return None


def _find_fuzzy(response: str, norm_response: _Normalized, text: str, cursor: int,
                threshold: float) -> tuple[int, int] | None:
    needle = normalize(text).text.strip()
    haystack = norm_response.text
    if not needle or len(needle) > len(haystack):
        return None
    for origin in (norm_response.from_original(cursor), 0):
        window = haystack[origin:]
        if len(needle) > len(window):
            continue
        match = fuzz.partial_ratio_alignment(needle, window, score_cutoff=threshold)
        if match is None:
            continue
        start, end = _refine(needle, haystack, origin + match.dest_start, origin + match.dest_end)
        start, end = norm_response.to_original(start, end)
        while start < end and response[start].isspace():
            start += 1
        while end > start and response[end - 1].isspace():
            end -= 1
        if end > start:
            return start, end
    return None


def _refine(needle: str, haystack: str, start: int, end: int) -> tuple[int, int]:
    """Shift the window's boundaries by up to a few characters to maximise ``fuzz.ratio`` with the needle."""
    reach = min(8, max(2, len(needle) // 10))
    best = (fuzz.ratio(needle, haystack[start:end]), start, end)
    for new_start in range(max(0, start - reach), min(len(haystack), start + reach) + 1):
        for new_end in range(max(new_start + 1, end - reach), min(len(haystack), end + reach) + 1):
            score = fuzz.ratio(needle, haystack[new_start:new_end])
            if score > best[0]:
                best = (score, new_start, new_end)
    return best[1], best[2]
