"""Percentile bootstrap: resample items (responses, or sources) with replacement, in bounded memory.

Every resample is a row of multiplicities (how often each item was drawn), so any statistic that is a sum over
items is one matrix product per resample; the rows are made in chunks of at most :data:`MAX_CELLS` cells, so
memory stays bounded however many items and resamples there are. The chunk size depends only on the number of
items, so results are reproducible for a given ``(items, resamples, seed)``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

from ragtruth_spans.core.errors import InputError

CI_LEVEL = 0.95
MAX_CELLS = 2_000_000
"""Multiplicity cells (resamples x items) made at once: a few tens of MB."""


def check_seed(seed: object) -> int:
    """``seed`` if it can seed the bootstrap (an integer >= 0), else :class:`InputError` naming ``--seed``."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"the bootstrap needs an integer >= 0, got {seed!r}", field="--seed")
    return int(seed)


def resample_weights(n_items: int, n_resamples: int, seed: int) -> Iterator[np.ndarray]:
    """Chunks (``rows x n_items``, float) of the multiplicity matrix of ``n_resamples`` resamples of
    ``n_items`` items, drawn from ``numpy.random.default_rng(seed)``. A seed that numpy cannot take (negative,
    not an integer) is an :class:`InputError` naming ``--seed``."""
    check_seed(seed)
    rng = np.random.default_rng(seed)
    rows = max(1, MAX_CELLS // max(n_items, 1))
    for start in range(0, n_resamples, rows):
        b = min(rows, n_resamples - start)
        draws = rng.integers(0, n_items, size=(b, n_items))
        flat = (draws + np.arange(b)[:, None] * n_items).ravel()
        yield np.bincount(flat, minlength=b * n_items).reshape(b, n_items).astype(float)


def bootstrap_sums(values: np.ndarray, n_resamples: int, seed: int,
                   groups: Mapping[str, np.ndarray] | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Column sums of ``values`` (``items x k``) in each resample: ``(overall, {group: sums})``, each of shape
    ``(n_resamples, k)``; a group (a boolean mask over items) sums only its items of the same resamples."""
    groups = groups or {}
    overall: list[np.ndarray] = []
    by_group: dict[str, list[np.ndarray]] = {name: [] for name in groups}
    for weights in resample_weights(len(values), n_resamples, seed):
        overall.append(weights @ values)
        for name, mask in groups.items():
            by_group[name].append(weights[:, mask] @ values[mask])
    def stack(parts: list[np.ndarray]) -> np.ndarray:
        return np.vstack(parts) if parts else np.zeros((0, values.shape[1]))

    return stack(overall), {name: stack(parts) for name, parts in by_group.items()}


def bootstrap_auroc(labels: np.ndarray, scores: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """AUROC (ties count half, as ``sklearn.metrics.roc_auc_score``) of each of ``n_resamples`` resamples of the
    items, the same resamples :func:`bootstrap_sums` draws for this ``(len(labels), n_resamples, seed)``; items
    whose score is NaN are drawn but not scored; NaN for a resample with one class only.

    >>> labels, scores = np.array([True, False, True, False]), np.array([0.9, 0.2, 0.6, 0.7])
    >>> samples = bootstrap_auroc(labels, scores, 200, seed=0)
    >>> samples.shape, bool(np.nanmin(samples) >= 0.0 and np.nanmax(samples) <= 1.0)
    ((200,), True)
    """
    labels, scores = np.asarray(labels, dtype=bool), np.asarray(scores, dtype=float)
    scored = np.flatnonzero(~np.isnan(scores))
    order = scored[np.argsort(scores[scored], kind="stable")]  # the scored items, lowest score first
    ranked = scores[order]
    first = np.searchsorted(ranked, ranked, side="left")  # each item's tie group: [first, last) of ``order``
    last = np.searchsorted(ranked, ranked, side="right")
    positive = labels[order]
    out: list[np.ndarray] = []
    for weights in resample_weights(len(scores), n_resamples, seed):
        drawn = weights[:, order]
        negatives = np.zeros((len(drawn), len(order) + 1))
        np.cumsum(drawn * ~positive, axis=1, out=negatives[:, 1:])  # negative weight up to each rank
        below, tied = negatives[:, first], negatives[:, last] - negatives[:, first]
        wins = (drawn * positive * (below + 0.5 * tied)).sum(axis=1)  # ties count half
        pairs = (drawn * positive).sum(axis=1) * negatives[:, -1]
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append(np.where(pairs > 0, wins / pairs, np.nan))
    return np.concatenate(out) if out else np.zeros(0)


def percentile_interval(samples: np.ndarray, level: float = CI_LEVEL) -> list[float] | None:
    """``[low, high]`` percentile bootstrap interval of ``samples`` at ``level`` (NaN samples, i.e. resamples where
    the metric is undefined, are skipped); ``None`` when no sample is defined."""
    samples = np.asarray(samples, dtype=float)
    finite = samples[~np.isnan(samples)]
    if finite.size == 0:
        return None
    alpha = (1 - level) / 2 * 100
    lo, hi = np.percentile(finite, [alpha, 100 - alpha])
    return [float(lo), float(hi)]
