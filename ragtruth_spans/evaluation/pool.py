"""Step 2 of evaluation: pool per-response counts into metrics — overall, per group, and per bootstrap resample.

Every metric is a function of column sums (:mod:`ragtruth_spans.evaluation.metrics`), so one function
(:func:`summarise`) serves the point estimate (sums of shape ``(k,)``) and all resamples at once (``(B, k)``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ragtruth_spans.evaluation import metrics
from ragtruth_spans.evaluation.bootstrap import CI_LEVEL, bootstrap_auroc, bootstrap_sums, percentile_interval
from ragtruth_spans.evaluation.counts import CountTable

LEVELS = {"span": ("overlap_chars", "pred_chars", "gold_chars"),
          "response": ("both_pos", "pred_pos", "gold_pos"),
          "seqeval": ("ent_tp", "ent_pred", "ent_gold")}
"""Each P/R/F1 level and its (true positives, predicted, gold) columns."""


def summarise(table: CountTable, sums: np.ndarray) -> dict[str, Any]:
    """Every pooled metric from column sums (shape ``(k,)`` for a point estimate, ``(B, k)`` for resamples)."""
    out: dict[str, Any] = {}
    for level, (tp, n_pred, n_gold) in LEVELS.items():
        p, r, f = metrics.prf(table.col(sums, tp), table.col(sums, n_pred), table.col(sums, n_gold))
        out[level] = {"precision": p, "recall": r, "f1": f}
    p, r, f = metrics.macro_prf(table.col(sums, "both_pos"), table.col(sums, "pred_pos"),
                                table.col(sums, "gold_pos"), table.col(sums, "responses"))
    out["response_macro"] = {"precision": p, "recall": r, "f1": f}
    out["type_recall"] = {
        t: metrics.safe_ratio(table.col(sums, f"type_covered:{t}"), table.col(sums, f"type_gold:{t}"),
                              undefined=math.nan)
        for t in table.types}
    return out


def to_python(tree: Any) -> Any:
    """Arrays and NumPy scalars → floats, NaN → None, recursively."""
    if isinstance(tree, dict):
        return {k: to_python(v) for k, v in tree.items()}
    value = float(tree)
    return None if math.isnan(value) else value


def group_metrics(table: CountTable, mask: np.ndarray, scores: np.ndarray | None) -> dict[str, Any]:
    """The metrics of the responses in ``mask``; AUROC over those of them whose score is not NaN."""
    summary = to_python(summarise(table, table.counts[mask].sum(axis=0)))
    auroc = None
    if scores is not None:
        scored = mask & ~np.isnan(scores)
        auroc = metrics.auroc(table.gold_pos[scored], scores[scored])
    return {"responses": int(mask.sum()), **summary, "auroc": auroc}


def _interval_tree(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: _interval_tree(v) for k, v in tree.items()}
    return percentile_interval(tree, CI_LEVEL)


def confidence_intervals(table: CountTable, groups: Mapping[str, Mapping[str, np.ndarray]], n: int,
                         seed: int, scores: np.ndarray | None = None) -> dict[str, Any]:
    """Percentile intervals from ``n`` resamples of the responses (``numpy.random.default_rng(seed)``): every
    metric overall (AUROC too, over the same resamples, when there are ``scores``), span and response P/R/F1
    per group (``groups[name][key]`` is a boolean mask)."""
    flat = {f"{name}\t{key}": mask for name, masks in groups.items() for key, mask in masks.items()}
    overall, by_group = bootstrap_sums(table.counts, n, seed, flat)
    ci: dict[str, Any] = {"level": CI_LEVEL, "resamples": n, "seed": seed, "method": "percentile"}
    ci["overall"] = _interval_tree(summarise(table, overall))
    ci["overall"]["auroc"] = (None if scores is None
                              else percentile_interval(bootstrap_auroc(table.gold_pos, scores, n, seed), CI_LEVEL))
    for name, masks in groups.items():
        ci[name] = {}
        for key in masks:
            resampled = summarise(table, by_group[f"{name}\t{key}"])
            ci[name][key] = _interval_tree({"span": resampled["span"], "response": resampled["response"]})
    return ci
