"""The threshold tuned on held-out records, and the measurements of aggregations and edge rules beside it.

For one set of model outputs (each response's window probabilities, computed once), :func:`tune` scores every
threshold of :data:`THRESHOLD_GRID` by character-level span F1 pooled over the responses (the project's headline
metric, :mod:`ragtruth_spans.evaluation.metrics`), for each aggregation (with the run's edge rule) and each edge
rule (with the run's aggregation). The run keeps the best threshold of its own aggregation and edge rule (ties:
the middle of the tied thresholds); the other rows are measurements, recorded in ``run_info.json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragtruth_spans.core.types import Record
from ragtruth_spans.detectors.token_classification.labels import SPAN_EDGES, spans_from_probabilities
from ragtruth_spans.detectors.token_classification.windows import AGGREGATIONS
from ragtruth_spans.evaluation.metrics import char_counts, prf

THRESHOLD_GRID: tuple[float, ...] = tuple(round(t, 2) for t in np.arange(0.02, 0.99, 0.02))


def span_scores(records: Sequence[Record], probs: Sequence[np.ndarray], offsets: Sequence[Sequence[tuple[int, int]]],
                threshold: float, *, scheme: str, span_edges: str) -> dict[str, float]:
    """Pooled character-level span precision, recall and F1 of the spans at ``threshold``."""
    gold_chars = pred_chars = overlap = 0
    for record, p, offs in zip(records, probs, offsets):
        spans = spans_from_probabilities(record.response, offs, p, threshold, scheme=scheme, span_edges=span_edges)
        g, q, o = char_counts(record.spans, spans)
        gold_chars, pred_chars, overlap = gold_chars + g, pred_chars + q, overlap + o
    precision, recall, f1 = prf(overlap, pred_chars, gold_chars)
    return {"precision": float(precision), "recall": float(recall), "f1": float(f1)}


def best_threshold(records: Sequence[Record], probs: Sequence[np.ndarray],
                   offsets: Sequence[Sequence[tuple[int, int]]], *, scheme: str, span_edges: str,
                   grid: Sequence[float] = THRESHOLD_GRID) -> dict[str, Any]:
    """``{"threshold", "precision", "recall", "f1"}`` of the grid threshold with the highest span F1; when several
    thresholds tie (a plateau: outputs well separated), the middle one of them."""
    rows = [{"threshold": t, **span_scores(records, probs, offsets, t, scheme=scheme, span_edges=span_edges)}
            for t in grid]
    top = max(row["f1"] for row in rows)
    tied = [row for row in rows if row["f1"] >= top - 1e-12]
    return tied[len(tied) // 2]


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
