"""Metric definitions for hallucinated-span detection (pure functions, no I/O).

Every metric is computed from **per-response counts** that are then **pooled** (summed) over responses
("micro" averaging), so the same formulas serve the point estimate, the by-task / by-model breakdowns and
every bootstrap resample. Units: characters of the response, half-open ``[start, end)``.

Per response, with ``G`` = union of its gold spans and ``P`` = union of its predicted spans
(intervals merged first, so a character counts once however many spans cover it):

- ``gold_chars = |G|``, ``pred_chars = |P|``, ``overlap_chars = |G ∩ P|``
- ``gold_pos = |G| > 0``, ``pred_pos = |P| > 0`` (the response "has at least one span"; empty spans do not count)
- for each gold type ``t``: ``G_t`` = union of the gold spans of type ``t``; ``type_gold_chars[t] = |G_t|``,
  ``type_covered_chars[t] = |G_t ∩ P|`` (predicted spans of **any** type cover it)
- word-level BIO tags (see :func:`bio_tags`) and seqeval entities: ``ent_tp``, ``ent_pred``, ``ent_gold``

Pooled metrics (sums over responses):

- span level:     P = Σoverlap / Σpred_chars,  R = Σoverlap / Σgold_chars
- response level: P = Σ(gold_pos ∧ pred_pos) / Σpred_pos,  R = Σ(gold_pos ∧ pred_pos) / Σgold_pos
- response macro (DelucionQA): the same P, R, F1 for the "clean" class (true negatives over predicted / gold
  clean responses), averaged with the hallucinated class's, as scikit-learn's ``average="macro"``
  (F1 = mean of the two classes' F1, not the F1 of the mean P and R)
- type recall:    R_t = Σtype_covered_chars[t] / Σtype_gold_chars[t]
- seqeval:        P = Σent_tp / Σent_pred,  R = Σent_tp / Σent_gold  (exact entity match)
- F1 = 2PR / (P + R)

Zero denominators (the seqeval / scikit-learn ``zero_division=0`` convention): P = 0 when nothing is predicted,
R = 0 when there is no gold, F1 = 0 when P + R = 0. Exception: a type recall whose type has no gold characters
is **undefined** (``None`` / NaN), because "0 % recall" of a type that does not occur would mislead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ragtruth_spans.core.intervals import Interval, covered_length, merge_intervals, overlap_length
from ragtruth_spans.core.types import Span

WORD_PATTERN = re.compile(r"\S+")
"""A word is a maximal run of non-whitespace characters (``\\S+``)."""

ENTITY_LABEL = "HAL"
"""The single seqeval entity label: the exact-span view is untyped (type errors are measured by type recall)."""

UNTYPED = "untyped"
"""The type-recall key of gold spans that carry no type."""


def char_counts(gold: Sequence[Span], pred: Sequence[Span]) -> tuple[int, int, int]:
    """``(gold_chars, pred_chars, overlap_chars)`` of one response, intervals merged first."""
    g = merge_intervals(gold)
    p = merge_intervals(pred)
    return covered_length(g), covered_length(p), overlap_length(g, p)


def type_char_counts(gold: Sequence[Span], pred: Sequence[Span]) -> dict[str, tuple[int, int]]:
    """Per gold type ``t`` (:data:`UNTYPED` for spans with no type): ``(|G_t|, |G_t ∩ P|)``, where ``G_t`` is the
    union of the response's gold spans of type ``t`` and ``P`` the union of all its predicted spans (any type)."""
    p = merge_intervals(pred)
    by_type: dict[str, list[Span]] = {}
    for span in gold:
        by_type.setdefault(span.type if span.type is not None else UNTYPED, []).append(span)
    out = {}
    for span_type, spans in by_type.items():
        g = merge_intervals(spans)
        out[span_type] = (covered_length(g), overlap_length(g, p))
    return out


def words(text: str) -> list[Interval]:
    """Character intervals ``[start, end)`` of the words of ``text`` (runs matching :data:`WORD_PATTERN`)."""
    return [m.span() for m in WORD_PATTERN.finditer(text)]


def bio_tags(word_intervals: Sequence[Interval], spans: Sequence[Span]) -> list[str]:
    """Word-level BIO tags (``B-HAL`` / ``I-HAL`` / ``O``) of one response.

    The spans are merged first; each merged interval becomes one entity made of the words that overlap it by at
    least one character and are not already part of the previous entity (a word shared by two intervals belongs
    to the first). A span covering only whitespace yields no entity.
    """
    tags = ["O"] * len(word_intervals)
    w = 0
    for start, end in merge_intervals(spans):
        while w < len(word_intervals) and word_intervals[w][1] <= start:
            w += 1
        first = True
        while w < len(word_intervals) and word_intervals[w][0] < end:
            tags[w] = f"{'B' if first else 'I'}-{ENTITY_LABEL}"
            first = False
            w += 1
    return tags


def entity_counts(gold_tags: Sequence[str], pred_tags: Sequence[str]) -> tuple[int, int, int]:
    """``(tp, n_pred, n_gold)`` of seqeval entities (``seqeval.metrics.sequence_labeling.get_entities``,
    default conlleval mode) in one response; ``tp`` counts exact matches of (label, first word, last word).
    Pooled over responses these give exactly seqeval's micro precision / recall / F1."""
    from seqeval.metrics.sequence_labeling import get_entities  # imported here: it pulls in scikit-learn

    g = set(get_entities(list(gold_tags)))
    p = set(get_entities(list(pred_tags)))
    return len(g & p), len(p), len(g)


def word_entity_counts(response: str, gold: Sequence[Span], pred: Sequence[Span]) -> tuple[int, int, int]:
    """:func:`entity_counts` of the BIO tags of ``response``'s words under ``gold`` and ``pred``.
    A response with no span on either side has no entity, so it is not tokenised."""
    if not gold and not pred:
        return 0, 0, 0
    w = words(response)
    return entity_counts(bio_tags(w, gold), bio_tags(w, pred))


def safe_ratio(num: np.ndarray | float, den: np.ndarray | float, *, undefined: float = 0.0) -> np.ndarray:
    """``num / den`` elementwise, ``undefined`` where ``den == 0``."""
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    out = np.full(np.broadcast(num, den).shape, undefined, dtype=float)
    np.divide(num, den, out=out, where=den != 0)
    return out


def prf(tp: np.ndarray | float, n_pred: np.ndarray | float, n_gold: np.ndarray | float
        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Precision ``tp / n_pred``, recall ``tp / n_gold``, F1 ``2PR / (P + R)``, elementwise (scalars or arrays).
    Zero denominators give 0 (P = 0 when nothing predicted, R = 0 when no gold, F1 = 0 when P + R = 0)."""
    precision = safe_ratio(tp, n_pred)
    recall = safe_ratio(tp, n_gold)
    f1 = safe_ratio(2 * precision * recall, precision + recall)
    return precision, recall, f1


def macro_prf(tp: np.ndarray | float, n_pred: np.ndarray | float, n_gold: np.ndarray | float,
              n: np.ndarray | float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Macro-averaged precision, recall and F1 over the two response classes (hallucinated, clean), from the
    positive class's ``tp``/``n_pred``/``n_gold`` and the number of responses ``n``; each class follows the
    zero-division rule of :func:`prf`."""
    tn = np.asarray(n, dtype=float) - n_pred - n_gold + tp
    pos = prf(tp, n_pred, n_gold)
    neg = prf(tn, np.asarray(n, dtype=float) - n_pred, np.asarray(n, dtype=float) - n_gold)
    return tuple((a + b) / 2 for a, b in zip(pos, neg))  # type: ignore[return-value]


def response_score(pred: Sequence[Span]) -> float | None:
    """Detection score of a response: the max score of its predicted spans, 0.0 with no span, ``None`` when a
    span has no score."""
    if not pred:
        return 0.0
    if any(s.score is None for s in pred):
        return None
    return float(max(s.score for s in pred))


def auroc(labels: Sequence[bool] | np.ndarray, scores: Sequence[float] | np.ndarray) -> float | None:
    """Area under the ROC curve of response-level detection (``sklearn.metrics.roc_auc_score``);
    ``None`` when it is undefined (no responses, or only one class among the gold labels)."""
    labels = np.asarray(labels, dtype=bool)
    if labels.size == 0 or labels.all() or not labels.any():
        return None
    from sklearn.metrics import roc_auc_score  # imported lazily: ~1 s

    return float(roc_auc_score(labels, np.asarray(scores, dtype=float)))
