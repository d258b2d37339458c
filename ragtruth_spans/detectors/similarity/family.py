"""The similarity family (``kind: similarity``): DelucionQA's sentence-similarity and keyword baselines.

By name, with the paper's thresholds (``sim-hybrid``: dev-tuned ones, see docs/BASELINES.md): ``sim-cosine``,
``sim-overlap``, ``sim-hybrid``, ``keyword-match``. From a run directory (``ragtruth-spans train`` on a
``kind: similarity`` recipe): the thresholds tuned on its dev split.
Options: ``device`` and ``batch_size`` (the sentence encoder of the cosine and hybrid methods), ``threshold``
(the method's one threshold instead of the tuned or paper one; ``sim-hybrid`` has two and refuses it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragtruth_spans.detectors.base import Detector
from ragtruth_spans.detectors.family import Family, check_options
from ragtruth_spans.detectors.similarity.recipe import SimilarityRecipe

OPTIONS = {"device", "batch_size", "threshold"}


def _with_threshold(detector: Any, threshold: float | None) -> Detector:
    """``detector`` with its one threshold set to ``threshold`` (None: unchanged)."""
    from ragtruth_spans.core.errors import InputError

    if threshold is None:
        return detector
    if len(detector.thresholds) != 1:
        raise InputError(f"the {detector.method} method has {len(detector.thresholds)} thresholds "
                         f"({', '.join(detector.thresholds)}), so one threshold option cannot set them; train a "
                         "similarity recipe to tune them", field="threshold")
    (name,) = detector.thresholds
    return detector.with_thresholds({name: float(threshold)}, {**detector.source, "thresholds_from": "option"})


def load(run_dir: str | Path, **options: Any) -> Detector:
    """The detector a similarity run directory describes (its recipe and tuned thresholds)."""
    from ragtruth_spans.detectors.recipes import read_finished_run
    from ragtruth_spans.detectors.similarity.train import detector_from_recipe

    check_options("similarity", options, OPTIONS)
    threshold = options.pop("threshold", None)
    run_dir = Path(run_dir)
    recipe, info = read_finished_run(run_dir, SimilarityRecipe, "thresholds", dict)
    detector = detector_from_recipe(recipe, info["thresholds"], **options)
    tuning = info.get("tuning") or {}
    detector.source = {"run_dir": str(run_dir.resolve()), "fingerprint": info.get("fingerprint"),
                       "thresholds_from": f"tuned on {tuning.get('split')}", "criterion": tuning.get("criterion")}
    return _with_threshold(detector, threshold)


def _named(name: str):
    def build(**options: Any) -> Detector:
        from ragtruth_spans.detectors.similarity.detector import NAMES, SimilarityDetector

        check_options(name, options, OPTIONS)
        threshold = options.pop("threshold", None)
        return _with_threshold(SimilarityDetector(NAMES[name], **options), threshold)
    return build


def train(recipe: SimilarityRecipe, **kwargs: Any) -> Any:
    from ragtruth_spans.detectors.similarity.train import train as train_similarity

    return train_similarity(recipe, **kwargs)


FAMILY = Family(kind="similarity", summary="DelucionQA baselines: unsupported sentences by cosine, overlap, both, "
                                           "or missing keywords",
                load=load, recipe=SimilarityRecipe, train=train,
                named={name: _named(name) for name in ("sim-cosine", "sim-overlap", "sim-hybrid", "keyword-match")})
