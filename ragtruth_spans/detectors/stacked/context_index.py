"""What the stacked detector's word features look up in one context: its sentences and :class:`ContextIndex`.

A context (and its question) is read once into sets and maps of words, stems, numbers and word n-grams that every
response to it shares (:mod:`.features` reads them per word; :mod:`.conflicts` and :mod:`.polarity` their anchors).
Intervals are characters ``[start, end)``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ragtruth_spans.data import lexicon
from ragtruth_spans.data.hours import record_hours
from ragtruth_spans.detectors.stacked import conflicts as conflict_signals
from ragtruth_spans.detectors.stacked import polarity as polarity_signals
from ragtruth_spans.detectors.stacked.structured import (
    clock_values,
    compound_parts,
    json_key_numbers,
    json_key_stems,
    region_names,
)
from ragtruth_spans.detectors.stacked.text import (
    name_like,
    normalise,
    number_phrases,
    number_value,
    opening_words,
    scaled_value,
    stem,
    words,
)

Interval = tuple[int, int]
MAX_NGRAM = 8
"""The longest word n-gram of a context kept (:attr:`ContextIndex.ngrams`)."""


_SENTENCE_BREAK = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]*[A-Z0-9])|\n+")


_ABBREVIATIONS = frozenset({"Dr.", "Mr.", "Mrs.", "Ms.", "St.", "Jr.", "Sr.", "Inc.", "Co.", "Ltd.", "vs.", "U.S.",
                            "No.", "Prof.", "Gen.", "Gov.", "Sen.", "Rep.", "Mt.", "Ft.", "e.g.", "i.e."})


def sentences(text: str) -> list[Interval]:
    """Sentence intervals ``[start, end)`` of ``text``, cut after ``.``/``!``/``?`` followed by a capital or a
    digit, and at line breaks (a fast rule: features only need sentence groups); trimmed, never empty.

    >>> text = "Dr. Lee left. 3 came!"
    >>> [text[a:b] for a, b in sentences(text)]
    ['Dr. Lee left.', '3 came!']
    """
    out, start = [], 0
    for m in [*_SENTENCE_BREAK.finditer(text), None]:
        end = m.start() if m is not None else len(text)
        if m is not None and text[start:end].rsplit(None, 1)[-1:] and \
                text[start:end].rsplit(None, 1)[-1] in _ABBREVIATIONS:
            continue
        piece = text[start:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            out.append((start + lead, start + lead + len(piece.strip())))
        if m is not None:
            start = m.end()
    return out


@dataclass(frozen=True)
class ContextIndex:
    """What the features look up in one context (and question): word, stem and number sets, the word n-grams."""

    words: frozenset[str]
    stems: frozenset[str]
    numbers: frozenset[str]
    question: frozenset[str]
    ngrams: frozenset[tuple[str, ...]]
    stem_ngrams: frozenset[tuple[str, ...]]
    vocabulary: tuple[str, ...]
    size: int
    false_keys: frozenset[str] = frozenset()
    true_keys: frozenset[str] = frozenset()
    tokens: tuple[str, ...] = ()
    capitalised: tuple[bool, ...] = ()
    after: dict[tuple[str, str], tuple[int, ...]] = field(default_factory=dict)
    before: dict[tuple[str, str], tuple[int, ...]] = field(default_factory=dict)
    after_word: dict[str, tuple[int, ...]] = field(default_factory=dict)
    before_word: dict[str, tuple[int, ...]] = field(default_factory=dict)
    negated: frozenset[tuple[str, str]] = frozenset()
    stem_tokens: tuple[str, ...] = ()
    token_negated: tuple[bool, ...] = ()
    sentence_spans: tuple[tuple[int, int], ...] = ()
    """Each context sentence as the token positions ``[start, end)`` it covers."""
    stem_sentences: dict[str, tuple[int, ...]] = field(default_factory=dict)
    key_numbers: dict[str, frozenset[str]] = field(default_factory=dict)
    """Per stem of a JSON key's words, the numbers under such keys (:func:`.structured.json_key_numbers`)."""
    hours: dict[int, str | None] = field(default_factory=dict)
    """A JSON record's opening hours per weekday (:func:`ragtruth_spans.data.hours.record_hours`)."""
    layouts: dict[int, object] = field(default_factory=dict, compare=False, repr=False)
    """Context sentences as :func:`~.polarity.restated_signals` reads them, built on first use and kept with the
    index (every response to this context reads the same ones)."""

    @classmethod
    def build(cls, context: str, question: str | None = None) -> ContextIndex:
        spans = words(context)
        tokens = [normalise(context[a:b]) for a, b in spans]
        stems = [stem(t) for t in tokens]
        question_words = [normalise(question[a:b]) for a, b in words(question)] if question else []
        parts = compound_parts(context) | region_names(context)
        numbers = _number_values(tokens)
        grams = {tuple(tokens[i:i + n]) for n in range(2, MAX_NGRAM + 1) for i in range(len(tokens) - n + 1)}
        stem_grams = {tuple(stems[i:i + n]) for n in range(2, MAX_NGRAM + 1) for i in range(len(stems) - n + 1)}
        vocabulary = tuple(sorted(set(tokens) | set(question_words) | parts))
        false_keys, true_keys = json_key_stems(context)
        sid = sentence_ids(spans, sentences(context)) if spans else np.zeros(0, dtype=np.int64)
        capitalised = tuple(name_like([context[a:b] for a, b in spans], tokens, opening_words(tokens, sid)))
        return cls(frozenset(tokens) | frozenset(question_words) | parts,
                   frozenset(stems) | {stem(q) for q in question_words} | {stem(p) for p in parts},
                   frozenset(numbers), frozenset(question_words), frozenset(grams), frozenset(stem_grams),
                   vocabulary, len(tokens), false_keys, true_keys, tuple(tokens), capitalised,
                   *conflict_signals.anchors(tokens), conflict_signals.negated_pairs(tokens), tuple(stems),
                   tuple(polarity_signals.negated(tokens, polarity_signals.breaks_after(context, spans)).tolist()),
                   *_sentence_layout(sid, stems),
                   key_numbers=json_key_numbers(context), hours=record_hours(context))


def _sentence_layout(sid: np.ndarray, stems: Sequence[str]) -> tuple[tuple[tuple[int, int], ...],
                                                                     dict[str, tuple[int, ...]]]:
    """The token range of each sentence of a context (``sid``: each word's sentence number) and, per content stem,
    the sentences holding it."""
    if not len(sid):
        return (), {}
    starts = np.r_[True, sid[1:] != sid[:-1]]  # sentences without words get no number
    ranges = tuple(itertools.pairwise([*np.flatnonzero(starts).tolist(), len(sid)]))
    return ranges, polarity_signals.context_sentences(stems, np.cumsum(starts) - 1)


def _number_values(tokens: Sequence[str]) -> set[str]:
    """Canonical values of the numbers of ``tokens``: digits (``1,200`` → ``1200``), digits times a scale word
    (``1.5 million`` → ``1.5e+06``, as ``1,500,000`` reads) and number words (``three`` → ``3``)."""
    values = [number_value(t) for t in tokens]
    out = {v for v in values if v is not None}
    out |= {n for t in tokens for n in clock_values(t)}
    out |= {n for i, v in enumerate(values) if v is not None and (n := scaled_value(tokens, i)) is not None}
    out |= {f"{lexicon.NUMBER_WORDS[t]:g}" for t in tokens if t in lexicon.NUMBER_WORDS}
    return out | set(number_phrases(tokens).values())


def sentence_ids(spans: Sequence[Interval], sentences: Sequence[Interval]) -> np.ndarray:
    """Index of the sentence that holds each word (the last sentence starting at or before it).

    >>> sentence_ids([(0, 1), (5, 7)], [(0, 3), (4, 8)]).tolist()
    [0, 1]
    """
    starts = np.array([s for s, _ in sentences] or [0])
    return np.clip(np.searchsorted(starts, [a for a, _ in spans], side="right") - 1, 0, len(starts) - 1)


