"""Polarity signals of the stacked detector: each response sentence is matched to the context sentence it restates
(the one sharing most content stems), and a word is marked where the two disagree in polarity — a negation added
(``does [not] offer`` against ``offers``) or dropped (``Dogs are [allowed]`` against ``Dogs are not allowed``), or
a contradicting word with the same polarity (``exports [fell]`` against ``exports rose``; ``a [minority]`` against
``the majority``) — while a negated contradicting word agrees (``is common`` against ``is not uncommon``).
A capitalised name the restated sentence lacks, next to a word where that sentence holds another name, is a
role swap (``[Laura Brenner] scored`` against ``Tom Reyes scored``). Unlike :mod:`.conflicts` nothing needs to be
copied word for word around the word: one content word either side, matched by stem, anchors it. Words are the normalised
tokens of :mod:`.features`; :class:`~.features.ContextIndex` keeps what :func:`context_sentences` builds."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from ragtruth_spans.data import lexicon
from ragtruth_spans.detectors.stacked import text

ContextIndex = Any
"""A :class:`~.features.ContextIndex` (not imported: the features module imports this one)."""

NEGATORS = frozenset({"not", "no", "never", "cannot", "without", "nor", "neither", "nothing", "none"})
NOT_NEGATING_NEXT = frozenset({"only", "just", "merely", "necessarily", "least", "later", "less", "more", "sooner",
                               "all", "every", "always", "quite", "very", "too", "much", "many", "longer"})
"""Words after which a negator does not negate what follows (``not only``, ``no later than``, ``not all``)."""
WINDOW = 2
"""A word is negated when a negator stands at most this many words before it."""
MIN_SHARED = 2
MIN_SHARE = 0.34
"""A response sentence restates a context sentence sharing at least MIN_SHARED of its distinct content stems and
at least MIN_SHARE of them."""


def is_negator(token: str) -> bool:
    """``not``, ``no``, ``never``... and contracted negations (``isn't``, ``can't``)."""
    return token in NEGATORS or token.endswith(("n't", "n’t"))


def negated(tokens: Sequence[str]) -> np.ndarray:
    """Per word, whether a negator stands within :data:`WINDOW` words before it (``not only`` negates nothing).

    >>> negated(["it", "is", "not", "open", "today"]).tolist()
    [False, False, False, True, True]
    """
    out = np.zeros(len(tokens), dtype=bool)
    for i, token in enumerate(tokens):
        if is_negator(token) and not (i + 1 < len(tokens) and tokens[i + 1] in NOT_NEGATING_NEXT):
            out[i + 1:i + 1 + WINDOW] = True
    return out


def context_sentences(stems: Sequence[str], sentence_of: Sequence[int]) -> dict[str, tuple[int, ...]]:
    """For each content stem of the context, the sentences holding it (``sentence_of``: each token's sentence)."""
    table: dict[str, set[int]] = {}
    for s, sid in zip(stems, sentence_of):
        if s not in text.STOP_WORDS:
            table.setdefault(s, set()).add(int(sid))
    return {s: tuple(sorted(ids)) for s, ids in table.items()}


def restated(stems: Sequence[str], sid: np.ndarray, index: ContextIndex) -> dict[int, int]:
    """For each response sentence (``sid``: each word's sentence), the context sentence it restates, when one
    qualifies (see :data:`MIN_SHARED`)."""
    out = {}
    for s in np.unique(sid):
        distinct = {stems[i] for i in np.flatnonzero(sid == s) if stems[i] not in text.STOP_WORDS}
        counts = Counter(c for stem in distinct for c in index.stem_sentences.get(stem, ()))
        if counts:
            best, shared = max(counts.items(), key=lambda kv: (kv[1], -kv[0]))
            if shared >= MIN_SHARED and shared >= MIN_SHARE * len(distinct):
                out[int(s)] = best
    return out


def _content(tokens: Sequence[str], positions: Sequence[int]) -> list[int]:
    """The positions among ``positions`` of content words (not stop words, not negators)."""
    return [p for p in positions if tokens[p] not in text.STOP_WORDS and not is_negator(tokens[p])]


def _neighbours(order: Sequence[int], stems: Sequence[str]) -> dict[int, frozenset[str]]:
    """For each content position, the stems of the content words right before and after it."""
    return {p: frozenset(stems[q] for q in (order[k - 1] if k else None, order[k + 1] if k + 1 < len(order) else None)
                         if q is not None) for k, p in enumerate(order)}


def _bare(word: str) -> str:
    return text.stem(word.replace("-", ""))


def _disagrees(word: str, around: frozenset[str], negated_here: bool, span: Sequence[int],
               near: dict[int, frozenset[str]], index: ContextIndex) -> bool:
    """Whether the context sentence (its content positions ``span``, with their neighbours ``near``) says the
    opposite of the response word next to the same content word (``around``: the response word's content
    neighbours): it holds the word there only with the other polarity, or (the word being nowhere in the
    context) a contradicting word with the same polarity."""
    bare = _bare(word)
    same = [p for p in span if _bare(index.tokens[p]) == bare and near[p] & around]
    if same:
        return {bool(index.token_negated[p]) for p in same} == {not negated_here}
    if word in index.words or bare in {_bare(index.tokens[p]) for p in span}:
        return False
    return any(near[p] & around and lexicon.contradicting(word, index.tokens[p])
               and bool(index.token_negated[p]) == negated_here for p in span)


def _names_elsewhere(i: int, around: frozenset[str], span: Sequence[int], near: dict[int, frozenset[str]],
                     own: frozenset[str], index: ContextIndex) -> bool:
    """Whether the context sentence holds, next to a content word the response name at ``i`` stands next to, another
    capitalised name that the response sentence (its words ``own``) does not mention."""
    return any(index.capitalised[p] and index.tokens[p] not in own and near[p] & around
               and text.number_value(index.tokens[p]) is None for p in span)


def restated_signals(tokens: Sequence[str], stems: Sequence[str], names: Sequence[bool], sid: np.ndarray,
                     index: ContextIndex) -> dict[str, np.ndarray]:
    """Per response word, 0/1 columns against the context sentence its sentence restates (see the module
    docstring): ``polarity`` where they disagree in polarity (and on the negators that make it so); ``role_swap``
    on a capitalised name (``names``: capitalised, not opening a sentence) the sentence lacks, where it holds
    another name next to the same word (``[Laura Brenner] scored`` against ``Tom Reyes scored``)."""
    out = {name: np.zeros(len(tokens), dtype=np.float32) for name in ("polarity", "role_swap")}
    if not len(tokens) or not index.sentence_spans:
        return out
    here = negated(tokens)
    for s, c in restated(stems, sid, index).items():
        span = _content(index.tokens, range(*index.sentence_spans[c]))
        near = _neighbours(span, index.stem_tokens)
        members = np.flatnonzero(sid == s).tolist()
        order = _content(tokens, members)
        around = _neighbours(order, stems)
        own = frozenset(tokens[i] for i in members)
        held = {_bare(index.tokens[p]) for p in span}
        for i in order:
            if text.number_value(tokens[i]) is not None:
                continue
            if _disagrees(tokens[i], around[i], bool(here[i]), span, near, index):
                out["polarity"][i] = 1.0
                out["polarity"][[k for k in range(max(i - WINDOW, 0), i) if here[i] and is_negator(tokens[k])]] = 1.0
            if names[i] and _bare(tokens[i]) not in held and _names_elsewhere(i, around[i], span, near, own, index):
                out["role_swap"][i] = 1.0
    return out
