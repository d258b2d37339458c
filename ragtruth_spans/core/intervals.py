"""Interval arithmetic on character spans.

Every interval is half-open ``(start, end)`` in characters. "Merging" unions overlapping *and touching*
intervals, so a character is counted once however many spans cover it.
"""

from __future__ import annotations

from collections.abc import Iterable

from ragtruth_spans.core.types import Span

Interval = tuple[int, int]


def merge_intervals(intervals: Iterable[Interval | Span]) -> list[Interval]:
    """Sorted, disjoint, non-touching union of ``intervals``; empty intervals are dropped."""
    pairs = sorted((i.start, i.end) if isinstance(i, Span) else (int(i[0]), int(i[1])) for i in intervals)
    merged: list[list[int]] = []
    for start, end in pairs:
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1][1] = end
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


def covered_length(merged: list[Interval]) -> int:
    """Number of characters in a merged (disjoint) interval list."""
    return sum(e - s for s, e in merged)


def overlap_length(a: list[Interval], b: list[Interval]) -> int:
    """Characters shared by two merged (sorted, disjoint) interval lists, in O(len(a) + len(b))."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total
