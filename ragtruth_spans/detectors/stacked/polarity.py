"""Polarity signals of the stacked detector. A response word is marked where the context says the opposite next
to the same content word, in whichever sentence: a negation added (``does [not] offer takeout`` against ``offers
takeout``) or dropped (``Dogs are [allowed]`` against ``Dogs are not allowed``), or a contradicting word with the
same polarity (``exports [fell]`` against ``exports rose``) — while a negated contradicting word agrees (``is
common`` against ``is not uncommon``). Against the context sentence a word's neighbourhood restates (the one
holding most of its neighbours' content stems), a closed-class word against another of its class anywhere in that
sentence (``a [minority]`` against ``the majority``) and a capitalised name the sentence lacks, next to a word where
it holds another name, are marked too (``[Laura Brenner] scored`` against ``Tom Reyes scored``). Unlike
:mod:`.conflicts` nothing needs to be copied word for word around the word: one content word either side, matched
by stem, anchors it. Words are the normalised tokens of :mod:`.features`; :class:`~.context_index.ContextIndex` keeps
what :func:`context_sentences` builds."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from ragtruth_spans.data import lexicon
from ragtruth_spans.detectors.stacked import text

ContextIndex = Any
"""A :class:`~.context_index.ContextIndex` (not imported: that module imports this one)."""

NEGATORS = text.NEGATORS | {"nothing", "none"}
NOT_NEGATING_NEXT = frozenset({"only", "just", "merely", "necessarily", "least", "later", "less", "more", "sooner",
                               "all", "every", "always", "quite", "very", "too", "much", "many", "longer"})
"""Words after which a negator does not negate what follows (``not only``, ``no later than``, ``not all``)."""
RESTATED_COLUMNS = ("polarity", "contrast_restated", "role_swap", "contrast_graded")
WINDOW = 2
"""A word is negated when a negator stands at most this many words before it."""
REACH = 4
MIN_SHARED = 2
MIN_SHARE = 0.34
"""A word's neighbourhood (the content words within REACH either side in its sentence) restates a context sentence
holding at least MIN_SHARED of its distinct content stems and at least MIN_SHARE of them."""


def is_negator(token: str) -> bool:
    """``not``, ``no``, ``never``... and contracted negations (``isn't``, ``can't``)."""
    return token in NEGATORS or token.endswith(("n't", "n’t"))


def negated(tokens: Sequence[str], breaks: Sequence[bool] | None = None) -> np.ndarray:
    """Per word, whether a negator stands within :data:`WINDOW` words before it (``not only`` negates nothing),
    with no punctuation between (``breaks[i]``: punctuation after word ``i``; ``No, watching`` negates nothing).

    >>> negated(["it", "is", "not", "open", "today"]).tolist()
    [False, False, False, True, True]
    >>> negated(["no", "watching", "it"], breaks=[True, False, False]).tolist()
    [False, False, False]
    """
    out = np.zeros(len(tokens), dtype=bool)
    for i in range(len(tokens)):
        if negates(tokens, i):
            for j in range(i + 1, min(i + 1 + WINDOW, len(tokens))):
                if breaks is not None and breaks[j - 1]:
                    break
                out[j] = True
    return out


def breaks_after(text: str, spans: Sequence[tuple[int, int]], marks: str = ",.;:!?\n") -> list[bool]:
    """Per word of ``text`` (``spans``: ``[start, end)``), whether one of ``marks`` (punctuation, a line break)
    stands between it and the next word (after the last word: before the end of ``text``).

    >>> breaks_after("No, it is not.", [(0, 2), (4, 6), (7, 9), (10, 13)])
    [True, False, False, True]
    """
    ends = [b for _, b in spans]
    starts = [a for a, _ in spans[1:]] + [len(text)]
    return [any(mark in text[b:a] for mark in marks) for b, a in zip(ends, starts)]


def negates(tokens: Sequence[str], i: int) -> bool:
    """Whether ``tokens[i]`` negates what follows it: a negator not followed by a word of
    :data:`NOT_NEGATING_NEXT` (``not only``, ``no later than``)."""
    return is_negator(tokens[i]) and not (i + 1 < len(tokens) and tokens[i + 1] in NOT_NEGATING_NEXT)


CLAUSE_BREAKS = frozenset({"but", "however", "although", "though", "while", "whereas", "yet", "and", "instead"})
"""Words that open a new clause for :func:`clause_negated` (``and`` too: ``does not take reservations and has
outdoor seating``; a list joined by ``or`` or commas stays in the clause)."""
BE_VERBS = frozenset({"is", "are", "was", "were"})


def clause_negated(response: str, spans: Sequence[tuple[int, int]], tokens: Sequence[str]) -> np.ndarray:
    """Per word, whether its clause denies it: a negator stands before it in the same clause (clauses end at
    ``.;:!?``, a line break and :data:`CLAUSE_BREAKS`) — ``does not have a garage, street parking, or [valet]`` —
    or a form of *be* and a negator follow it within three words (``street parking [is] not available``). What a
    JSON key's word asserts or denies is read this way (:func:`~.features._key_columns`).

    >>> text = "It has no garage, street or valet parking, and offers WiFi. Seating is not available."
    >>> spans = [(m.start(), m.end()) for m in __import__("re").finditer(r"[\\w-]+", text)]
    >>> tokens = [text[a:b].lower() for a, b in spans]
    >>> [t for t, on in zip(tokens, clause_negated(text, spans, tokens)) if on]
    ['garage', 'street', 'or', 'valet', 'parking', 'seating', 'available']
    """
    clause = clause_ids(response, spans, tokens)
    out = np.zeros(len(tokens), dtype=bool)
    denied_from = -1  # the clause a negator has opened, if any
    for i in range(len(tokens)):
        after = [j for j in range(i + 1, min(i + 4, len(tokens) - 1)) if clause[j + 1] == clause[i]]
        out[i] = denied_from == clause[i] or any(tokens[j] in BE_VERBS and is_negator(tokens[j + 1]) for j in after)
        if negates(tokens, i):
            denied_from = clause[i]
    return out


def clause_ids(response: str, spans: Sequence[tuple[int, int]], tokens: Sequence[str]) -> np.ndarray:
    """Per word, the number of its clause: a new clause starts after ``.;:!?`` or a line break between two words,
    and at a word of :data:`CLAUSE_BREAKS`.

    >>> clause_ids("No garage, or valet; it has WiFi but no lot.", [(0, 2), (3, 9), (11, 13), (14, 19), (21, 23),
    ...            (24, 27), (28, 32), (33, 36), (37, 39), (40, 43)],
    ...            ["no", "garage", "or", "valet", "it", "has", "wifi", "but", "no", "lot"]).tolist()
    [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    """
    ends = breaks_after(response, spans, marks=".;:!?\n")
    clause = np.zeros(len(tokens), dtype=np.int64)
    for i in range(1, len(tokens)):
        clause[i] = clause[i - 1] + (ends[i - 1] or tokens[i] in CLAUSE_BREAKS)
    return clause


def context_sentences(stems: Sequence[str], sentence_of: Sequence[int]) -> dict[str, tuple[int, ...]]:
    """For each content stem of the context, the sentences holding it (``sentence_of``: each token's sentence)."""
    table: dict[str, set[int]] = {}
    for s, sid in zip(stems, sentence_of):
        if s not in text.STOP_WORDS:
            table.setdefault(s, set()).add(int(sid))
    return {s: tuple(sorted(ids)) for s, ids in table.items()}


def _best_sentence(near: set[str], index: ContextIndex) -> int | None:
    """The context sentence holding most of the stems ``near``, when it holds enough (see :data:`MIN_SHARED`)."""
    counts = Counter(c for stem in near for c in index.stem_sentences.get(stem, ()))
    if not counts:
        return None
    best, shared = max(counts.items(), key=lambda kv: (kv[1], -kv[0]))
    return best if shared >= MIN_SHARED and shared >= MIN_SHARE * len(near) else None


def restated(stems: Sequence[str], order: Sequence[int], index: ContextIndex, reach: int = REACH) -> dict[int, int]:
    """For each content word of one response sentence (``order``: their positions, in order), the context sentence
    its neighbourhood restates: the one holding most of the distinct content stems within ``reach`` content words
    either side (the word's own excluded), which follows a response sentence that merges several of the context's;
    words with no qualifying sentence (see :data:`MIN_SHARED`) are left out."""
    out = {}
    for k, i in enumerate(order):
        best = _best_sentence({stems[j] for j in order[max(k - reach, 0):k + reach + 1] if j != i}, index)
        if best is not None:
            out[i] = best
    return out


def _content(tokens: Sequence[str], positions: Sequence[int]) -> list[int]:
    """The positions among ``positions`` of content words (not stop words, not negators, not numbers: a number
    between two words is no neighbour of either, in the response as in the context) and of closed-class words
    (``most``, ``few``, ``more``: stop words that can contradict)."""
    return [p for p in positions if ((tokens[p] not in text.STOP_WORDS and not is_negator(tokens[p]))
                                     or _closed(tokens[p])) and text.number_value(tokens[p]) is None]


def _closed(word: str) -> bool:
    return lexicon.contrast_class(word) is not None or word in lexicon.ANTONYMS


def _reverses_direction(word: str, negated_here: bool) -> bool:
    """Whether a word the restated sentence contradicts states a direction: a comparative or superlative
    (``slower``, ``smallest``, ``fewer``) or, not negated, a trend (``rose``, ``dropped``)."""
    return word in lexicon.GRADED or (not negated_here and lexicon.contrast_class(word) == "trend")


def _same_order(before: Sequence[str], after: Sequence[str], sentence: int, word: str, index: ContextIndex,
                reach: int = 4) -> bool:
    """Whether a response word stands between the same things as a word contradicting it in the context sentence
    ``sentence``: the last ``reach`` content stems ``before`` it and the first ``reach`` ``after`` it (in its
    clause) meet more of the content stems of that word's clause on the same sides than on the swapped ones. ``A is
    [slower] than B`` against ``A is faster than B`` keeps the sides (a contradiction); ``B is [slower] than A``
    swaps them (the same comparison said the other way round)."""
    mine_before, mine_after = set(before[-reach:]), set(after[:reach])
    start, end = index.sentence_spans[sentence]
    for p in range(start, end):
        if lexicon.contradicting(word, index.tokens[p]):
            ahead, behind = _clause_sides(index.tokens, _content(index.tokens, range(start, end)), p, start, end)
            if len(mine_before & set(ahead)) + len(mine_after & set(behind)) > \
                    len(mine_before & set(behind)) + len(mine_after & set(ahead)):
                return True
    return False


def _clause_sides(tokens: Sequence[str], order: Sequence[int], i: int, start: int = 0, end: int | None = None
                  ) -> tuple[list[str], list[str]]:
    """The stems of the content words (``order``: their positions) before and after position ``i`` within its
    clause — cut at :data:`CLAUSE_BREAKS` words, inside ``[start, end)`` (default: all of ``tokens``) — nearest
    last and first."""
    end = len(tokens) if end is None else end
    first = next((q + 1 for q in range(i - 1, start - 1, -1) if tokens[q] in CLAUSE_BREAKS), start)
    last = next((q for q in range(i + 1, end) if tokens[q] in CLAUSE_BREAKS), end)
    return ([_bare(tokens[j]) for j in order if first <= j < i], [_bare(tokens[j]) for j in order if i < j < last])


def _neighbours(order: Sequence[int], stems: Sequence[str]) -> dict[int, frozenset[str]]:
    """For each content position, the stems of the content words right before and after it."""
    return {p: frozenset(stems[q] for q in (order[k - 1] if k else None, order[k + 1] if k + 1 < len(order) else None)
                         if q is not None) for k, p in enumerate(order)}


@lru_cache(maxsize=65536)
def _bare(word: str) -> str:
    return text.stem(word.replace("-", ""))


class Sentence(NamedTuple):
    """A context sentence as :func:`restated_signals` reads it, built once per sentence."""

    span: list[int]
    """Its content positions."""
    near: dict[int, frozenset[str]]
    """Each content position's neighbours' stems."""
    bare: dict[int, str]
    """Each content position's stem, hyphens dropped."""
    held: frozenset[str]
    """Those stems."""

    @classmethod
    def of(cls, c: int, index: ContextIndex) -> Sentence:
        span = _content(index.tokens, range(*index.sentence_spans[c]))
        bare = {p: _bare(index.tokens[p]) for p in span}
        return cls(span, _neighbours(span, index.stem_tokens), bare, frozenset(bare.values()))


def _disagrees(word: str, around: frozenset[str], negated_here: bool, layouts: Sequence[Sentence],
               index: ContextIndex, *, anchored: bool) -> bool:
    """Whether the context sentences ``layouts`` say the opposite of the response word next to the same content
    word (``around``: the response word's content neighbours): they hold the word there only with the other
    polarity (``does not support audiobooks`` against ``supports audiobooks``), or (the word being nowhere in the
    context) a contradicting word with the same polarity (``faster than buses`` against ``slower than``) and none
    that entails it (``[Many] Yazidis`` against ``some of them`` and ``thousands of Yazidis``) — next to a shared
    neighbour, or anywhere in them when not ``anchored``."""
    bare = _bare(word)
    held = {bool(index.token_negated[p]) for layout in layouts for p in layout.span
            if layout.bare[p] == bare and layout.near[p] & around}
    if held:
        return held == {not negated_here}
    if word in index.words or any(bare in layout.held for layout in layouts):
        return False
    same = [p for layout in layouts for p in layout.span if bool(index.token_negated[p]) == negated_here
            and (not anchored or layout.near[p] & around)]
    return any(lexicon.contradicting(word, index.tokens[p]) for p in same) and \
        not any(lexicon.entails(index.tokens[p], word) for p in same)


def _names_elsewhere(around: frozenset[str], sentence: Sentence, own: frozenset[str], index: ContextIndex) -> bool:
    """Whether the context sentence holds, next to a content word a response name stands next to (``around``),
    another capitalised name that the response sentence (its words ``own``) does not mention."""
    return any(index.capitalised[p] and index.tokens[p] not in own and sentence.near[p] & around
               and text.number_value(index.tokens[p]) is None for p in sentence.span)


def restated_signals(tokens: Sequence[str], stems: Sequence[str], names: Sequence[bool], here: np.ndarray,
                     sid: np.ndarray, index: ContextIndex) -> dict[str, np.ndarray]:
    """Per response word, 0/1 columns against the context sentence it restates (see the module docstring):
    ``polarity`` where a context sentence disagrees in polarity next to a shared neighbour (and on the negators
    that make it so); against the sentence its neighbourhood restates, ``contrast_restated``
    on a closed-class word or antonym the context lacks where that sentence holds a contradicting one anywhere
    (``contrast_graded`` when that word states a direction the same way round: ``recovered [slowest]`` against
    ``gained coral fastest``, not ``B is slower than A`` against ``A is faster than B``), and ``role_swap`` on a
    capitalised name (``names``: capitalised, not opening a sentence) the sentence lacks, where it holds another
    name next to the same word (``[Laura Brenner] scored`` against ``Tom Reyes scored``); ``here``:
    :func:`negated` of ``tokens``."""
    out = {name: np.zeros(len(tokens), dtype=np.float32) for name in RESTATED_COLUMNS}
    if not len(tokens) or not index.sentence_spans:
        return out
    layout: dict[int, Sentence] = index.layouts  # kept with the index: shared by the responses to one context

    def sentence(c: int) -> Sentence:
        if c not in layout:
            layout[c] = Sentence.of(c, index)
        return layout[c]

    for s in np.unique(sid):
        members = np.flatnonzero(sid == s).tolist()
        order = _content(tokens, members)
        around, own = _neighbours(order, stems), frozenset(tokens[i] for i in members)
        for i in order:
            holding = sorted({c for stem in around[i] for c in index.stem_sentences.get(stem, ())})
            if _disagrees(tokens[i], around[i], bool(here[i]), [sentence(c) for c in holding], index, anchored=True):
                out["polarity"][i] = 1.0
                out["polarity"][[k for k in range(max(i - WINDOW, 0), i) if here[i] and is_negator(tokens[k])]] = 1.0
        for i, c in restated(stems, order, index).items():
            if _closed(tokens[i]) and _disagrees(tokens[i], around[i], bool(here[i]), [sentence(c)], index,
                                                 anchored=False):
                out["contrast_restated"][i] = 1.0
                out["contrast_graded"][i] = float(_reverses_direction(tokens[i], bool(here[i])) and _same_order(
                    *_clause_sides(tokens, order, i), c, tokens[i], index))
            if names[i] and _bare(tokens[i]) not in sentence(c).held \
                    and _names_elsewhere(around[i], sentence(c), own, index):
                out["role_swap"][i] = 1.0
    return out
