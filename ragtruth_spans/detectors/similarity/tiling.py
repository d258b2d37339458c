"""DelucionQA's overlap ratio between two sentences (Sadat et al. 2023, Listing 2).

Dynamic programming finds the longest common phrase (a run of identical consecutive tokens) of two token lists;
its tokens are marked as used on both sides and the search repeats on the unused tokens (greedy string tiling)
until the longest phrase left is shorter than the minimum. Only phrases of at least
``max(min_words, ceil(min_share * n))`` tokens count, where ``n`` is the token count of the **shorter**
sentence, and the ratio is ``overlapped tokens / n``. Dividing by the shorter sentence is what lets one long
response sentence that merges several context sentences (a one-to-many mapping) still reach a high ratio with
each of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

MIN_WORDS = 4
MIN_SHARE = 0.3


def min_phrase_length(shorter: int, *, min_words: int = MIN_WORDS, min_share: float = MIN_SHARE) -> int:
    """The shortest phrase that counts between sentences whose shorter one has ``shorter`` tokens."""
    return max(min_words, math.ceil(min_share * shorter))


def _longest_unused_phrase(a: Sequence[str], b: Sequence[str], used_a: list[bool],
                           used_b: list[bool]) -> tuple[int, int, int]:
    """``(length, end in a, end in b)`` of the longest common run of unused tokens (DP over common suffixes)."""
    best = (0, 0, 0)
    previous = [0] * (len(b) + 1)
    for i in range(1, len(a) + 1):
        current = [0] * (len(b) + 1)
        if not used_a[i - 1]:
            token = a[i - 1]
            for j in range(1, len(b) + 1):
                if not used_b[j - 1] and b[j - 1] == token:
                    current[j] = previous[j - 1] + 1
                    if current[j] > best[0]:
                        best = (current[j], i, j)
        previous = current
    return best


def overlapped_tokens(a: Sequence[str], b: Sequence[str], min_length: int) -> int:
    """Tokens of ``a`` covered by the common phrases of at least ``min_length`` tokens (greedy tiling)."""
    used_a, used_b = [False] * len(a), [False] * len(b)
    covered = 0
    while True:
        length, end_a, end_b = _longest_unused_phrase(a, b, used_a, used_b)
        if length < min_length:
            return covered
        for k in range(length):
            used_a[end_a - 1 - k] = used_b[end_b - 1 - k] = True
        covered += length


def ngrams(tokens: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def overlap_ratio(a: Sequence[str], b: Sequence[str], *, min_words: int = MIN_WORDS,
                  min_share: float = MIN_SHARE) -> float:
    """The overlap ratio of two token lists in [0, 1] (see the module docstring); 0.0 when either is empty or
    the shorter one is shorter than the minimum phrase."""
    shorter = min(len(a), len(b))
    if shorter == 0:
        return 0.0
    min_length = min_phrase_length(shorter, min_words=min_words, min_share=min_share)
    if shorter < min_length or not ngrams(a, min_length) & ngrams(b, min_length):
        return 0.0  # no common phrase of the minimum length: skip the DP
    return overlapped_tokens(a, b, min_length) / shorter
