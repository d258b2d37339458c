"""The entailment family (``kind: entailment``): an NLI cross-encoder trained here (:mod:`.train`) and the
detector that flags the response sentences no context window entails (:mod:`.detector`).

Options of :func:`load` (``load_detector(run_dir, **options)``): ``device`` (default: CUDA when available),
``batch_size`` (pairs run together), ``threshold`` (P(entailment) below which a sentence is flagged; default:
the run's ``detection.threshold``), ``windows`` and ``window_sentences`` (the run's ``detection`` values by
default: fewer and shorter premises cost less) and ``runtime`` (``torch``, default; ``onnx-fp32`` or
``onnx-int8``: :mod:`.onnx`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragtruth_spans.detectors.base import Detector
from ragtruth_spans.detectors.entailment.recipe import EntailmentRecipe
from ragtruth_spans.detectors.family import Family, check_options

KIND = "entailment"
OPTIONS = {"device", "batch_size", "threshold", "runtime", "windows", "window_sentences"}


def load(run_dir: str | Path, **options: Any) -> Detector:
    """The detector of a finished entailment run directory (see the module docstring)."""
    check_options(KIND, options, OPTIONS)
    from ragtruth_spans.detectors.entailment.run_dir import load_run

    return load_run(run_dir, **options)


def train(recipe: EntailmentRecipe, **kwargs: Any) -> Any:
    from ragtruth_spans.detectors.entailment.train import train as train_entailment

    return train_entailment(recipe, **kwargs)


FAMILY = Family(kind=KIND, summary="NLI cross-encoder: a span over each response sentence no context window "
                                   "entails", load=load, recipe=EntailmentRecipe, train=train)
