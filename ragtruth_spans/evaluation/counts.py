"""Step 1 of evaluation: per-response counts (a responses x columns matrix), from which every metric is pooled.

Columns (definitions in :mod:`ragtruth_spans.evaluation.metrics`): ``gold_chars``, ``pred_chars``,
``overlap_chars``, ``gold_pos``, ``pred_pos``, ``both_pos``, ``ent_tp``, ``ent_pred``, ``ent_gold``,
``responses`` (1 per row), then ``type_gold:<type>`` and ``type_covered:<type>`` for every gold type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ragtruth_spans.core.types import HALLUCINATION_TYPES, Record, Span
from ragtruth_spans.evaluation import metrics

BASE_COLUMNS = ("gold_chars", "pred_chars", "overlap_chars", "gold_pos", "pred_pos", "both_pos",
                "ent_tp", "ent_pred", "ent_gold", "responses")


@dataclass
class SpanTally:
    """Raw span counts over the whole evaluation (spans, not characters)."""

    gold_before_filters: int = 0
    dropped_implicit_true: int = 0
    dropped_due_to_null: int = 0
    gold: int = 0
    predicted: int = 0
    empty_predicted: int = 0
    scored_predicted: int = 0
    unscored_predicted: int = 0


@dataclass
class CountTable:
    """The per-response count matrix plus each response's task, model and gold label."""

    columns: list[str]
    counts: np.ndarray
    tasks: np.ndarray
    models: np.ndarray
    types: list[str]
    tally: SpanTally = field(default_factory=SpanTally)

    def col(self, sums: np.ndarray, name: str) -> np.ndarray:
        """Column ``name`` of summed counts (shape ``(k,)`` or ``(B, k)``)."""
        return sums[..., self.columns.index(name)]

    @property
    def gold_pos(self) -> np.ndarray:
        return self.counts[:, self.columns.index("gold_pos")] > 0

    def totals(self) -> np.ndarray:
        return self.counts.sum(axis=0)


def filter_gold(spans: Sequence[Span], ignore_implicit_true: bool, ignore_due_to_null: bool
                ) -> tuple[list[Span], int, int]:
    """Gold spans kept by the adaptive filters (RAGTruth §3.4), and how many each active filter matched."""
    kept, n_implicit, n_null = [], 0, 0
    for span in spans:
        drop_implicit = ignore_implicit_true and span.implicit_true
        drop_null = ignore_due_to_null and span.due_to_null
        n_implicit += drop_implicit
        n_null += drop_null
        if not (drop_implicit or drop_null):
            kept.append(span)
    return kept, n_implicit, n_null


def _tally(tally: SpanTally, gold: Sequence[Span], kept: Sequence[Span], pred: Sequence[Span],
           dropped: tuple[int, int]) -> None:
    tally.gold_before_filters += len(gold)
    tally.dropped_implicit_true += dropped[0]
    tally.dropped_due_to_null += dropped[1]
    tally.gold += len(kept)
    tally.predicted += len(pred)
    tally.empty_predicted += sum(1 for s in pred if s.start == s.end)
    tally.scored_predicted += sum(1 for s in pred if s.score is not None)
    tally.unscored_predicted += sum(1 for s in pred if s.score is None)


def count_responses(gold: Sequence[Record], predictions: Mapping[str, Sequence[Span]], *,
                    ignore_implicit_true: bool = False, ignore_due_to_null: bool = False) -> CountTable:
    """The :class:`CountTable` of ``gold`` records against ``predictions`` (a missing id predicts no span)."""
    types = list(HALLUCINATION_TYPES)
    rows, type_rows = [], []
    tally = SpanTally()
    for record in gold:
        pred = list(predictions.get(record.id, ()))
        kept, *dropped = filter_gold(record.spans, ignore_implicit_true, ignore_due_to_null)
        _tally(tally, record.spans, kept, pred, tuple(dropped))
        gold_chars, pred_chars, overlap = metrics.char_counts(kept, pred)
        ent = metrics.word_entity_counts(record.response, kept, pred)
        positive = gold_chars > 0 or record.unlocated  # a response-level label without spans counts here only
        rows.append((gold_chars, pred_chars, overlap, positive, pred_chars > 0, positive and pred_chars > 0, *ent, 1))
        per_type = metrics.type_char_counts(kept, pred)
        types.extend(t for t in per_type if t not in types)
        type_rows.append(per_type)

    columns = list(BASE_COLUMNS) + [f"type_{kind}:{t}" for t in types for kind in ("gold", "covered")]
    counts = np.zeros((len(gold), len(columns)), dtype=float)
    if rows:
        counts[:, :len(BASE_COLUMNS)] = np.asarray(rows, dtype=float)
    for i, per_type in enumerate(type_rows):
        for t, (g, c) in per_type.items():
            counts[i, columns.index(f"type_gold:{t}")] = g
            counts[i, columns.index(f"type_covered:{t}")] = c
    return CountTable(columns=columns, counts=counts, tasks=np.array([r.task_type for r in gold]),
                      models=np.array([r.model for r in gold]), types=types, tally=tally)


def char_rows(gold: Sequence[Record], predicted: Sequence[Sequence[Span]]) -> np.ndarray:
    """An ``(n, 3)`` integer array: each response's ``gold_chars``, ``pred_chars``, ``overlap_chars`` (no gold
    filters), what :func:`figures_of_rows` pools."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(predicted)} predictions for {len(gold)} gold records")
    rows = [metrics.char_counts(record.spans, pred) for record, pred in zip(gold, predicted)]
    return np.asarray(rows, dtype=np.int64).reshape(len(rows), 3)


def figures_of_rows(rows: np.ndarray) -> dict[str, dict[str, float]]:
    """``{"span", "response", "response_macro"}`` → ``{"precision", "recall", "f1"}`` pooled from
    :func:`char_rows` (a response is positive when it has a character of its kind).

    >>> figures_of_rows(np.array([[4, 4, 2], [0, 0, 0]]))["span"]["f1"]
    0.5
    """
    gold_chars, pred_chars, overlap = (int(v) for v in rows.sum(axis=0))  # zeros for no rows
    gold_pos, pred_pos = int((rows[:, 0] > 0).sum()), int((rows[:, 1] > 0).sum())
    both_pos = int(((rows[:, 0] > 0) & (rows[:, 1] > 0)).sum())
    out = {}
    for level, figures in (("span", metrics.prf(overlap, pred_chars, gold_chars)),
                           ("response", metrics.prf(both_pos, pred_pos, gold_pos)),
                           ("response_macro", metrics.macro_prf(both_pos, pred_pos, gold_pos, len(rows)))):
        out[level] = dict(zip(("precision", "recall", "f1"), (float(v) for v in figures)))
    return out


def pooled_figures(gold: Sequence[Record], predicted: Sequence[Sequence[Span]]) -> dict[str, dict[str, float]]:
    """``{"span", "response", "response_macro"}`` → ``{"precision", "recall", "f1"}`` of ``predicted`` (one span
    list per gold record, in the same order), pooled exactly as :func:`~ragtruth_spans.evaluation.evaluate`
    reports them in ``overall`` (no gold filters) — and nothing else (no input checks, seqeval, types, AUROC,
    bootstrap), so that a tuning loop can score many candidate decisions on the same records quickly. The one
    counter every threshold tuner uses (:func:`ragtruth_spans.training.tuning.tune_thresholds`)."""
    return figures_of_rows(char_rows(gold, predicted))
