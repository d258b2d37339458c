"""Conflict signals of the stacked detector: where the context says something *else* than the response, not merely
nothing (a changed number, name or antonym between copied word pairs, a negation added or dropped, a number one
digit edit away from a context number). :func:`anchors` and :func:`negated_pairs` build what
:class:`~.context_index.ContextIndex` keeps for them; :func:`conflicts` and :func:`near_number` read it. Words are
normalised tokens of :mod:`.features` (characters, half-open intervals there)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragtruth_spans.data import lexicon
from ragtruth_spans.detectors.stacked import text

ContextIndex = Any
"""A :class:`~.context_index.ContextIndex` (not imported: that module imports this one)."""

MAX_SWAP = 3
"""Longest run of response words that :func:`conflicts` treats as one substitution."""


def _negation_base(token: str) -> str | None:
    """The verb of a contracted negation (``isn't`` → ``is``, ``doesn't`` → ``does``), None for other words."""
    for suffix in ("n't", "n’t"):
        if token.endswith(suffix) and len(token) > len(suffix):
            return {"ca": "can", "wo": "will", "sha": "shall"}.get(token[: -len(suffix)], token[: -len(suffix)])
    return None


def anchors(tokens: Sequence[str]) -> tuple[dict, dict, dict, dict]:
    """``(after, before, after_word, before_word)`` of the context's words: for each word pair, the positions
    right after it (``after[(a, b)]`` holds ``p`` where ``tokens[p-2:p] == [a, b]``) and right before it
    (``before[(a, b)]`` holds ``q`` where ``tokens[q:q+2] == [a, b]``); the same for single content words."""
    after: dict[tuple[str, str], list[int]] = {}
    before: dict[tuple[str, str], list[int]] = {}
    after_word: dict[str, list[int]] = {}
    before_word: dict[str, list[int]] = {}
    for i, token in enumerate(tokens):
        if token not in text.STOP_WORDS:
            after_word.setdefault(token, []).append(i + 1)
            before_word.setdefault(token, []).append(i)
        if i + 1 < len(tokens):
            pair = (token, tokens[i + 1])
            after.setdefault(pair, []).append(i + 2)
            before.setdefault(pair, []).append(i)
    return tuple({k: tuple(v) for k, v in table.items()} for table in (after, before, after_word, before_word))


def negated_pairs(tokens: Sequence[str]) -> frozenset[tuple[str, str]]:
    """Word pairs ``(a, b)`` that the context separates by a negation (``a not b``, ``a never b``), or joins by a
    contracted one (``isn't b`` gives ``(is, b)``)."""
    pairs = set()
    for i, token in enumerate(tokens):
        if token in text.NEGATORS and 0 < i < len(tokens) - 1:
            pairs.add((tokens[i - 1], tokens[i + 1]))
        base = _negation_base(token)
        if base is not None and i < len(tokens) - 1:
            pairs.add((base, tokens[i + 1]))
    return frozenset(pairs)


def _same_kind(word: str, capitalised: bool, other: str, other_capitalised: bool) -> bool:
    """Whether a context word could stand where a response word stands: two numbers of different values, or both
    capitalised content words, or two words that contradict (:func:`~ragtruth_spans.data.lexicon.contradicting`)."""
    if lexicon.contradicting(word, other):
        return True
    value, other_value = text.number_value(word), text.number_value(other)
    if (value is None) != (other_value is None):
        return False
    if value is not None:
        return value != other_value  # ``five`` and ``5`` agree
    return capitalised and other_capitalised and other not in text.STOP_WORDS


def _contradicts(block: Sequence[str], capitalised: Sequence[bool], at: int, index: ContextIndex) -> list[int]:
    """The positions in ``block`` (response words) that contradict the context words of the same length at
    ``at`` — when some word differs and every differing pair is two different numbers, two different names (the
    response's may stand elsewhere in the context: a role swap), antonyms (``rose``/``fell``) or two members of
    one closed class (``kilograms``/``pounds``, ``most``/``few``, months:
    :func:`~ragtruth_spans.data.lexicon.contradicting`); else none."""
    ctx = index.tokens[at:at + len(block)]
    differ = [i for i, (r, c) in enumerate(zip(block, ctx)) if r != c]
    if not differ or len(ctx) != len(block):
        return []
    for i in differ:
        word, other = block[i], ctx[i]
        if lexicon.contradicting(word, other):  # antonyms, or two members of one closed class (units, months...)
            continue
        if not _same_kind(word, capitalised[i], other, index.capitalised[at + i]):
            return []
    return differ


def _copied(tokens: Sequence[str], j: int, m: int, index: ContextIndex) -> bool:
    """Whether the response's words ``[j, m)`` with one word either side stand word for word in the context:
    then another place of the context says what the response says, and no substitution is read there."""
    run = tuple(tokens[max(j - 1, 0):m + 1])
    return len(run) > 1 and run in index.ngrams


def near_number(token: str, numbers: frozenset[str]) -> bool:
    """Whether ``token`` is a whole number of two or more digits that the context lacks but holds one digit edit
    away, at the same length (``1923`` against ``1932``, ``208`` against ``206``): how changed numbers look. On
    the pool's training and dev responses 35 of the 60 such words are hallucinated, against 170 of all 768
    unsupported numbers."""
    from rapidfuzz.distance import DamerauLevenshtein

    digits = token.replace(",", "")
    if len(digits) < 2 or not digits.isdigit() or text.number_value(token) in numbers:
        return False
    return any(len(n) == len(digits) and n.isdigit() and DamerauLevenshtein.distance(n, digits) == 1
               for n in numbers)


def _contradicted_next_to(word: str, lefts: Sequence[int], rights: Sequence[int], ctx: Sequence[str]) -> bool:
    """Whether the context holds, right after a content word that precedes ``word`` in the response (``lefts``:
    context positions after it) or right before one that follows it (``rights``: positions of it), a word that
    contradicts ``word`` (another unit, month, quantity word, or an antonym: ``8 [euros]`` against ``8 dollars``).
    One anchor word is enough here, where :func:`_same_kind` words need two."""
    if not lexicon.contrasting(word) and word not in lexicon.ANTONYMS:
        return False
    return any(p < len(ctx) and lexicon.contradicting(word, ctx[p]) for p in lefts) or \
        any(q > 0 and lexicon.contradicting(word, ctx[q - 1]) for q in rights)


def _swapped_one_side(word: str, capitalised: bool, index: ContextIndex, lefts: Sequence[Sequence[int]],
                      rights: Sequence[Sequence[int]]) -> bool:
    """``swap_one_side`` of a response word the context lacks (see :func:`conflicts`); ``lefts``: the context
    positions after its preceding word pair and word, ``rights``: the positions of its following pair and word."""
    ctx = index.tokens
    (left_pair, left_single), (right_pair, right_single) = lefts, rights
    if any(p < len(ctx) and _same_kind(word, capitalised, ctx[p], index.capitalised[p]) for p in left_pair):
        return True
    if any(q > 0 and _same_kind(word, capitalised, ctx[q - 1], index.capitalised[q - 1]) for q in right_pair):
        return True
    return _contradicted_next_to(word, left_single, right_single, ctx)


def _stated_number(tokens: Sequence[str], j: int, index: ContextIndex) -> bool:
    """Whether ``tokens[j]`` is a number the context states in another form (``five`` for ``5``, ``nine thousand``
    for ``9,000``)."""
    value = text.number_value(tokens[j])
    return value is not None and tokens[j] not in index.words and (
        value in index.numbers or text.scaled_value(tokens, j) in index.numbers)


def conflicts(tokens: Sequence[str], capitalised: Sequence[bool], index: ContextIndex,
              markers: Sequence[bool] | None = None) -> dict[str, np.ndarray]:
    """Signals that the context says something else where the response copies it (contradicted, not merely
    absent), one 0/1 value per response word (``tokens``: normalised words; ``capitalised``: their first letter):

    - ``swap``: a run of 1–3 words between anchors that the context holds the same number of words apart, where
      the context has other numbers, other names or antonyms (``opened in [1998] and closed`` against
      ``opened in 1999 and closed``; ``sales [fell] by`` against ``sales rose by``);
    - ``swap_one_side``: a word the context lacks, right after (or before) a word pair of the context where the
      context has another word of the same kind (a number, or a capitalised name) instead — or, for a word with
      a contradicting counterpart (another unit, month, quantity word, an antonym), next to one content word of
      the context where the context has that counterpart;
    - ``negation_added``: a negation (``not``, ``isn't``) before a content word whose removal leaves a word pair
      of the context (and the negated phrase is not the context's too), and the word after it;
    - ``negation_dropped``: a content word after a word the context separates from it only by a negation
      (``is [open]`` against ``is not open``), the response not negating it itself.

    A run that stands word for word elsewhere in the context (with a word either side) is no substitution, and
    ``markers`` (the numbers of a numbered list, ``9.``), numbers the context states in another form and parts
    of longer spelled numbers are never read as changed numbers.
    """
    n = len(tokens)
    phrases = text.number_phrases(tokens)  # parts of longer spelled numbers: not numbers of their own
    markers = [bool(m) or j in phrases or _stated_number(tokens, j, index) for j, m in
               enumerate(markers if markers is not None else [False] * n)]
    out = {name: np.zeros(n, dtype=np.float32)
           for name in ("swap", "swap_one_side", "negation_added", "negation_dropped")}

    def after(j: int) -> list[tuple[int, ...]]:  # context positions that could stand at response position j
        pair = index.after.get((tokens[j - 2], tokens[j - 1]), ())[:64] if j >= 2 else ()
        single = index.after_word.get(tokens[j - 1], ())[:64] if j >= 1 and tokens[j - 1] not in text.STOP_WORDS else ()
        return [pair, single]

    def before(m: int) -> list[tuple[int, ...]]:  # context positions that could end a run ending at m
        pair = index.before.get((tokens[m], tokens[m + 1]), ())[:64] if m + 1 < n else ()
        single = index.before_word.get(tokens[m], ())[:64] if m < n and tokens[m] not in text.STOP_WORDS else ()
        return [pair, single]

    for j in range(n):
        left_pair, left_single = after(j)
        for m in range(j + 1, min(j + MAX_SWAP, n) + 1):
            if any(markers[j:m]) or _copied(tokens, j, m, index):
                continue
            right_pair, right_single = before(m)
            for lefts, rights in ((left_pair, right_pair), (left_pair, right_single), (left_single, right_pair)):
                found = next((d for p in lefts for q in rights if q - p == m - j
                              for d in [_contradicts(tokens[j:m], capitalised[j:m], p, index)] if d), [])
                for i in found:
                    out["swap"][j + i] = 1.0
                if found:
                    break
        if tokens[j] not in index.words and not markers[j] and _swapped_one_side(
                tokens[j], capitalised[j], index, (left_pair, left_single), before(j + 1) if j + 1 < n else [(), ()]):
            out["swap_one_side"][j] = 1.0
        if _negation_added(tokens, j, index):
            out["negation_added"][j:j + 2] = 1.0
        if _negation_dropped(tokens, j, index):
            out["negation_dropped"][j] = 1.0
    return out


def _negation_dropped(tokens: Sequence[str], j: int, index: ContextIndex) -> bool:
    """Whether the content word ``tokens[j]`` follows a word the context separates from it only by a negation
    (``is [open]`` against ``is not open``, the context never saying ``is open``), with no negation of the
    response's own within three words before it or right after it (``careful not to [break]``, ``is [usually]
    not``) — ``negation_dropped`` of :func:`conflicts`."""
    pair = (tokens[j - 1], tokens[j]) if j > 0 else None
    if pair is None or pair not in index.negated or pair in index.ngrams or tokens[j] in text.STOP_WORDS:
        return False
    near = [*tokens[max(j - 3, 0):j], *tokens[j:j + 2]]
    return not any(t in text.NEGATORS or _negation_base(t) is not None for t in near)


def _negation_added(tokens: Sequence[str], j: int, index: ContextIndex) -> bool:
    """Whether ``tokens[j]`` is a negation before a content word whose removal leaves a word pair of the context,
    the negated phrase not being the context's too (``negation_added`` of :func:`conflicts`)."""
    n, base = len(tokens), _negation_base(tokens[j])
    removed = (tokens[j - 1], tokens[j + 1]) if 0 < j < n - 1 and tokens[j] in text.NEGATORS else \
        (base, tokens[j + 1]) if base is not None and j < n - 1 else None
    return removed is not None and removed in index.ngrams and tokens[j + 1] not in text.STOP_WORDS \
        and tuple(tokens[j - 1:j + 2]) not in index.ngrams  # without its negation it copies the context
