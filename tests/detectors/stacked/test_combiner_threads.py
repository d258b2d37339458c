"""The word model's boosters train on every core the process may use, and the booster does not depend on how many."""

from __future__ import annotations

import numpy as np
import pytest

from ragtruth_spans.detectors.stacked import combiner
from ragtruth_spans.detectors.stacked.recipe import CombinerSection


def test_the_booster_is_the_same_on_one_thread_and_on_two(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4000, 6)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] * x[:, 2] + rng.normal(size=len(x)) > 0.3).astype(np.float64)
    settings = CombinerSection(min_data_in_leaf=20, max_rounds=40, seeds=2)
    grown = {}
    for threads in (1, 2):
        monkeypatch.setattr(combiner, "training_threads", lambda threads=threads: threads)
        ensemble = combiner.fit(x, y, x[:500], y[:500], settings, [f"c{i}" for i in range(6)], rounds=[40, 30])
        grown[threads] = ([b.model_to_string().split("parameters:")[0] for b in ensemble.boosters],
                          ensemble.predict(x[:200]))
    assert grown[1][0] == grown[2][0]  # the trees, to the digit
    assert np.array_equal(grown[1][1], grown[2][1])
    assert combiner.training_threads() >= 1
