"""The word model's optional constraints: support columns never raise a word's probability, contradiction columns
never lower it (``combiner.monotone``), and the dataset priors share no tree with the other columns
(``combiner.additive_priors``)."""

from __future__ import annotations

import numpy as np

from ragtruth_spans.detectors.stacked import combiner, constraints
from ragtruth_spans.detectors.stacked.recipe import CombinerSection

NAMES = ["in_context", "swap", "task_QA", "word_position", "length"]


def _data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Labels that *rise* with support where the prior is high: what an unconstrained booster would learn."""
    rng = np.random.default_rng(seed)
    x = rng.random(size=(6000, len(NAMES))).astype(np.float32)
    logit = -2 * x[:, 0] + 2 * x[:, 1] + 3 * x[:, 0] * (x[:, 2] > 0.5) + x[:, 3] * x[:, 4] + rng.normal(size=len(x))
    return x, (logit > 0.5).astype(np.float64)


def _tree_features(node: dict) -> set[str]:
    if "split_feature" not in node:
        return set()
    return {NAMES[node["split_feature"]]} | _tree_features(node["left_child"]) | _tree_features(node["right_child"])


def test_monotone_support_and_contradiction_columns() -> None:
    x, y = _data()
    settings = CombinerSection(min_data_in_leaf=20, max_rounds=60, monotone=True)
    ensemble = combiner.fit(x, y, x[:500], y[:500], settings, NAMES, rounds=[60])
    grid = np.linspace(0, 1, 21, dtype=np.float32)
    for row in x[:50]:
        sweep = np.repeat(row[None], len(grid), axis=0)
        sweep[:, 0] = grid
        assert np.all(np.diff(ensemble.predict(sweep)) <= 1e-12)  # more support: never more likely
        sweep = np.repeat(row[None], len(grid), axis=0)
        sweep[:, 1] = grid
        assert np.all(np.diff(ensemble.predict(sweep)) >= -1e-12)  # more contradiction: never less likely
    free = combiner.fit(x, y, x[:500], y[:500], CombinerSection(min_data_in_leaf=20, max_rounds=60), NAMES,
                        rounds=[60])
    high_prior = x[:, 2] > 0.5
    low, high = x[high_prior].copy(), x[high_prior].copy()
    low[:, 0], high[:, 0] = 0.1, 0.9
    assert np.mean(free.predict(high) > free.predict(low)) > 0.5  # unconstrained, it learns the reversal


def test_additive_priors_share_no_tree_with_other_columns() -> None:
    x, y = _data(1)
    settings = CombinerSection(min_data_in_leaf=20, max_rounds=40, additive_priors=True)
    ensemble = combiner.fit(x, y, x[:500], y[:500], settings, NAMES, rounds=[40])
    priors = {"task_QA", "word_position"}
    trees = [_tree_features(t["tree_structure"]) for t in ensemble.boosters[0].dump_model()["tree_info"]]
    assert any(t & priors for t in trees) and any(t - priors for t in trees)
    assert all(not (t & priors) or t <= priors for t in trees)
    assert constraints.interaction_groups(NAMES) == [[2, 3], [0, 1, 4]]
    assert constraints.monotone_directions(NAMES) == [-1, 1, 0, 0, 0]
