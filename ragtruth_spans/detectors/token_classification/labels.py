"""Label schemes, and the two conversions between character spans and token labels.

Offsets are characters of the response, half-open ``[start, end)``, as the fast tokenizer's ``offset_mapping``
gives them for the response tokenized on its own.

- **spans → labels** (:func:`token_labels`): a token is positive when its characters overlap a gold span (any
  overlap: a token cut by a span edge belongs to the span); with the ``typed`` scheme it takes the type of the span
  it overlaps most (every gold span must then have one of the four RAGTruth types: a span without a type, or with
  another one, is an :class:`~ragtruth_spans.core.errors.InputError`). Tokens without characters (zero-width) are
  labelled O.
- **probabilities → spans** (:func:`spans_from_probabilities`): tokens whose P(hallucinated) = 1 - P(O) reaches
  the threshold are flagged; consecutive flagged tokens merge into one span running from the first token's start
  to the last token's end (the whitespace between them is inside the span, as in the gold labels). The span's
  edges are then cut by the ``span_edges`` rule (:data:`SPAN_EDGES`), its score is the mean P(hallucinated) of its
  tokens and, with the typed scheme, its type is the hallucination type of highest mean probability.

Edge rules (measured in docs/TOKEN_CLASSIFICATION.md):

- ``tokens``: the tokens' own offsets (byte-level BPE tokens carry their leading space: " 1998");
- ``trim-space``: whitespace stripped at both edges (the default: gold spans never start or end with whitespace);
- ``trim-punct``: also strip ``, ; :`` at both edges and a final ``.`` (a sentence's full stop);
- ``words``: grow the span to whole words (``\\S+`` runs), then ``trim-punct``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ragtruth_spans.core.errors import InputError, check_choice
from ragtruth_spans.core.types import HALLUCINATION_TYPES, Span

OUTSIDE = "O"
HALLUCINATED = "hallucinated"
LABEL_SCHEMES: dict[str, tuple[str, ...]] = {
    "binary": (OUTSIDE, HALLUCINATED),
    "typed": (OUTSIDE, *HALLUCINATION_TYPES),
}
"""``{scheme: label names}``; label 0 is always O (not hallucinated)."""
SPAN_EDGES: tuple[str, ...] = ("tokens", "trim-space", "trim-punct", "words")
IGNORE_INDEX = -100
"""The label of tokens the loss skips (special tokens, the context)."""

Offsets = Sequence[tuple[int, int]]
_EDGE_PUNCT = ",;:"
_WORD = re.compile(r"\S+")


def label_names(scheme: str) -> tuple[str, ...]:
    check_choice(scheme, LABEL_SCHEMES, "label scheme", field="labels.scheme")
    return LABEL_SCHEMES[scheme]


def check_span_types(spans: Sequence[Span], record_id: str | None = None) -> None:
    """Every gold span must carry one of the RAGTruth types for the ``typed`` scheme: a span without a type, or
    with another one, is an :class:`InputError` naming the record and the field ``spans[i].type``."""
    for i, span in enumerate(spans):
        if span.type in HALLUCINATION_TYPES:
            continue
        what = "has no type" if span.type is None else f"has the unknown type {span.type!r}"
        where = f"record {record_id!r}: " if record_id is not None else ""
        raise InputError(f"{where}gold span [{span.start}, {span.end}) {what}; labels.scheme=typed needs one of "
                         f"{', '.join(HALLUCINATION_TYPES)} on every span (labels.scheme=binary ignores types)",
                         field=f"spans[{i}].type")


def token_labels(offsets: Offsets, spans: Sequence[Span], scheme: str, *, record_id: str | None = None) -> list[int]:
    """One label id per token: 0 (O), or the positive label of the span the token overlaps (see module doc).
    With the ``typed`` scheme every span must have a RAGTruth type (:func:`check_span_types`; ``record_id`` names
    the record in the error)."""
    names = label_names(scheme)
    if scheme == "typed":
        check_span_types(spans, record_id)
    labels = [0] * len(offsets)
    for i, (start, end) in enumerate(offsets):
        if end <= start:
            continue
        best, best_overlap = 0, 0
        for span in spans:
            overlap = min(end, span.end) - max(start, span.start)
            if overlap > best_overlap:
                best_overlap = overlap
                best = 1 if scheme == "binary" else names.index(span.type)
        labels[i] = best
    return labels


def hallucination_probability(probs: np.ndarray) -> np.ndarray:
    """P(hallucinated) = 1 - P(O) of each token, from ``(tokens, labels)`` probabilities."""
    return 1.0 - probs[:, 0]


def trim_edges(text: str, start: int, end: int, rule: str) -> tuple[int, int]:
    """``[start, end)`` of ``text`` cut by an edge rule of :data:`SPAN_EDGES`; may return an empty interval."""
    check_choice(rule, SPAN_EDGES, "span edge rule", field="span_edges")
    if rule == "tokens":
        return start, end
    if rule == "words":
        for match in _WORD.finditer(text):
            if match.start() < start < match.end():
                start = match.start()
            if match.start() < end < match.end():
                end = match.end()
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if rule in ("trim-punct", "words"):
        while start < end and (text[start] in _EDGE_PUNCT or text[start].isspace()):
            start += 1
        while end > start and (text[end - 1] in _EDGE_PUNCT or text[end - 1].isspace()):
            end -= 1
        if end > start and text[end - 1] == "." and (end == len(text) or text[end].isspace()):
            end -= 1
    return start, end


def flagged_runs(flags: Sequence[bool] | np.ndarray, offsets: Offsets) -> list[tuple[int, int]]:
    """``(first, last + 1)`` token index ranges of consecutive flagged tokens that have characters."""
    runs: list[tuple[int, int]] = []
    first = None
    for i, flag in enumerate(flags):
        if flag and offsets[i][1] > offsets[i][0]:
            if first is None:
                first = i
            last = i + 1
        elif flag:  # a zero-width token neither opens nor breaks a run
            continue
        elif first is not None:
            runs.append((first, last))
            first = None
    if first is not None:
        runs.append((first, last))
    return runs


def spans_from_probabilities(text: str, offsets: Offsets, probs: np.ndarray, threshold: float, *, scheme: str,
                             span_edges: str = "trim-space") -> list[Span]:
    """Spans of ``text`` from per-token label probabilities ``(tokens, labels)`` (see the module docstring)."""
    names = label_names(scheme)
    p_hal = hallucination_probability(probs)
    spans = []
    for first, last in flagged_runs(p_hal >= threshold, offsets):
        start, end = trim_edges(text, offsets[first][0], offsets[last - 1][1], span_edges)
        if end <= start:
            continue
        run = slice(first, last)
        span_type = None
        if scheme == "typed":
            span_type = names[1 + int(np.argmax(probs[run, 1:].mean(axis=0)))]
        spans.append(Span(start, end, type=span_type, score=round(float(p_hal[run].mean()), 6)))
    return spans


def labels_to_spans(text: str, offsets: Offsets, labels: Sequence[int], *, scheme: str,
                    span_edges: str = "trim-space") -> list[Span]:
    """The spans that token labels encode (the inverse of :func:`token_labels`, up to token granularity and
    the edge rule); typed labels give typed spans."""
    n_labels = len(label_names(scheme))
    probs = np.zeros((len(labels), n_labels))
    for i, label in enumerate(labels):
        probs[i, label if label >= 0 else 0] = 1.0
    return [Span(s.start, s.end, type=s.type) for s in
            spans_from_probabilities(text, offsets, probs, 0.5, scheme=scheme, span_edges=span_edges)]
