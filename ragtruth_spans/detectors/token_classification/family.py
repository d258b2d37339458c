"""The token-classification family: an encoder (or a QLoRA decoder) that labels every response token.

Options of :func:`load` (``load_detector(run_dir, **options)``): ``device`` (default: CUDA when available),
``batch_size`` (windows run together), ``threshold`` (P(hallucinated) at or above which a token is flagged;
default: the one tuned on the run's eval split), ``aggregation`` (mean, max, min, best, by-type), ``span_edges``
(tokens, trim-space, trim-punct, words) and ``load_in_4bit`` (LoRA runs: override the recipe's quantization).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragtruth_spans.detectors.base import Detector
from ragtruth_spans.detectors.family import Family, check_options
from ragtruth_spans.detectors.token_classification.recipe import TokenClassificationRecipe

KIND = "token-classification"
OPTIONS = {"device", "batch_size", "threshold", "aggregation", "span_edges", "load_in_4bit"}


def load(run_dir: str | Path, **options: Any) -> Detector:
    """A token-classification detector from a finished run directory (see the module docstring)."""
    check_options(KIND, options, OPTIONS)
    from ragtruth_spans.detectors.token_classification.run_dir import load_run

    return load_run(run_dir, **options)


def train(recipe: TokenClassificationRecipe, **kwargs: Any) -> Any:
    from ragtruth_spans.detectors.token_classification.train import train as train_token_classifier

    return train_token_classifier(recipe, **kwargs)


FAMILY = Family(kind=KIND, summary="token classifier (encoder, or QLoRA decoder) labelling every response token",
                load=load, recipe=TokenClassificationRecipe, train=train, extra_sources="unweighted")
