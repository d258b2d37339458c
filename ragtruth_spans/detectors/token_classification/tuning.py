"""The threshold tuned on held-out records, and the measurements of aggregations and edge rules beside it.

For one set of model outputs (each response's window probabilities, computed once), :func:`tune` scores every
threshold of :data:`THRESHOLD_GRID` (this family's grid: the probabilities are per token, so the grid is finer than
the sentence baselines') by character-level span F1 pooled over the responses, for each aggregation (with the
run's edge rule) and each edge rule (with the run's aggregation), with the project's one tuner
(:func:`ragtruth_spans.training.tuning.tune_thresholds`: one counter, tested against the evaluator; ties: the
lowest threshold). The run keeps the best threshold of its own aggregation and edge rule; the other rows are
measurements, recorded in ``run_info.json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.detectors.token_classification.labels import SPAN_EDGES, spans_from_probabilities
from ragtruth_spans.detectors.token_classification.windows import AGGREGATIONS
from ragtruth_spans.evaluation.counts import pooled_figures
from ragtruth_spans.training.tuning import tune_thresholds

THRESHOLD_GRID: tuple[float, ...] = tuple(round(t, 2) for t in np.arange(0.02, 0.99, 0.02))


def _spans(records: Sequence[Record], probs: Sequence[np.ndarray], offsets: Sequence[Sequence[tuple[int, int]]],
           threshold: float, scheme: str, span_edges: str) -> list[list[Span]]:
    return [spans_from_probabilities(r.response, offs, p, threshold, scheme=scheme, span_edges=span_edges)
            for r, p, offs in zip(records, probs, offsets)]


def span_scores(records: Sequence[Record], probs: Sequence[np.ndarray], offsets: Sequence[Sequence[tuple[int, int]]],
                threshold: float, *, scheme: str, span_edges: str) -> dict[str, float]:
    """Pooled character-level span precision, recall and F1 of the spans at ``threshold``."""
    return pooled_figures(records, _spans(records, probs, offsets, threshold, scheme, span_edges))["span"]


def best_threshold(records: Sequence[Record], probs: Sequence[np.ndarray],
                   offsets: Sequence[Sequence[tuple[int, int]]], *, scheme: str, span_edges: str,
                   grid: Sequence[float] = THRESHOLD_GRID) -> dict[str, Any]:
    """``{"threshold", "precision", "recall", "f1"}`` of the grid threshold with the highest span F1 (the one
    tuner's rule: ties go to the lowest threshold)."""
    result = tune_thresholds(records, [{"threshold": t} for t in sorted(grid)],
                             lambda c: _spans(records, probs, offsets, c["threshold"], scheme, span_edges),
                             criterion="span_f1")
    row = next(r for r in result.table if r["threshold"] == result.thresholds["threshold"])
    return {"threshold": row["threshold"], "precision": row["span_precision"], "recall": row["span_recall"],
            "f1": row["span_f1"]}


def tune(detector: Any, records: Sequence[Record], *, aggregation: str, span_edges: str,
         fixed_threshold: float | None = None) -> dict[str, Any]:
    """Run ``detector`` (a :class:`~.detector.TokenClassificationDetector`) over ``records`` once, then measure:
    ``{"threshold", "aggregation", "span_edges", "dev": {precision, recall, f1}, "aggregations": {name: best},
    "span_edges_rules": {rule: best}, "windows": n}``. With ``fixed_threshold`` the run's threshold is that one
    (the recipe named it) and the grid only measures. Records that no window fits (their result has an
    ``error``) are left out."""
    results = detector.window_probabilities(records)
    kept = [i for i, r in enumerate(results) if r.error is None]
    records, results = [records[i] for i in kept], [results[i] for i in kept]
    offsets = [r.offsets for r in results]
    scheme = detector.scheme
    by_aggregation: dict[str, dict[str, Any]] = {}
    probs_of: dict[str, list[np.ndarray]] = {}
    for name in AGGREGATIONS:
        if name == "by-type" and scheme != "typed":
            continue
        probs_of[name] = [detector.token_probabilities(r, name) for r in results]
        by_aggregation[name] = best_threshold(records, probs_of[name], offsets, scheme=scheme, span_edges=span_edges)
    by_edges = {rule: best_threshold(records, probs_of[aggregation], offsets, scheme=scheme, span_edges=rule)
                for rule in SPAN_EDGES}
    chosen = by_edges[span_edges]
    threshold = chosen["threshold"] if fixed_threshold is None else fixed_threshold
    dev = span_scores(records, probs_of[aggregation], offsets, threshold, scheme=scheme, span_edges=span_edges)
    return {"threshold": threshold, "tuned": fixed_threshold is None, "aggregation": aggregation,
            "span_edges": span_edges, "dev": dev, "aggregations": by_aggregation, "span_edges_rules": by_edges,
            "responses": len(records), "windows": sum(r.windows for r in results)}
