"""LightGBM imported without scikit-learn (the CLI's ``detect``): boosters train, cross-validate and predict as
with it, and scikit-learn still imports afterwards."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("lightgbm")

SCRIPT = """
import sys
import numpy as np
from ragtruth_spans.detectors.stacked.combiner import import_lightgbm_alone
import_lightgbm_alone()
assert "lightgbm" in sys.modules and "sklearn" not in sys.modules and "pandas" not in sys.modules
import lightgbm
rng = np.random.default_rng(0)
x = rng.normal(size=(400, 3))
y = (x[:, 0] > 0).astype(float)
params = {"objective": "binary", "verbose": -1, "deterministic": True, "num_threads": 1, "seed": 0}
booster = lightgbm.train(params, lightgbm.Dataset(x, y), 10)
folds = [(np.arange(0, 200), np.arange(200, 400)), (np.arange(200, 400), np.arange(0, 200))]
cv = lightgbm.cv(params, lightgbm.Dataset(x, y), num_boost_round=5, folds=folds)
import sklearn.metrics
print(round(sklearn.metrics.roc_auc_score(y, booster.predict(x)), 6), len(next(iter(cv.values()))))
"""


def test_boosters_work_and_sklearn_still_imports() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    auroc, rounds = done.stdout.split()
    assert float(auroc) > 0.95 and rounds == "5"


def test_a_no_op_once_sklearn_is_imported() -> None:
    import sklearn  # noqa: F401

    from ragtruth_spans.detectors.stacked.combiner import import_lightgbm_alone

    import_lightgbm_alone()
    assert sys.modules.get("sklearn") is not None
