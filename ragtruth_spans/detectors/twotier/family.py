"""The two-tier family (``kind: two-tier``): RAGHalu-style tier-1 rules + a fine-tuned cross-encoder.

Loaded from a run directory of ``ragtruth-spans train`` on a ``kind: two-tier`` recipe. Options: ``device``,
``batch_size`` (cross-encoder pairs per forward pass), ``threshold`` (override the tuned one).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragtruth_spans.detectors.base import Detector
from ragtruth_spans.detectors.family import Family, check_options
from ragtruth_spans.detectors.twotier.recipe import TwoTierRecipe

OPTIONS = {"device", "batch_size", "threshold"}


def load(run_dir: str | Path, **options: Any) -> Detector:
    """The two-tier detector of a finished run directory."""
    from ragtruth_spans.detectors.recipes import read_finished_run
    from ragtruth_spans.detectors.twotier.detector import MODEL_DIR, TwoTierDetector

    check_options("two-tier", options, OPTIONS)
    run_dir = Path(run_dir)
    recipe, info = read_finished_run(run_dir, TwoTierRecipe, "threshold", (int, float))
    threshold = options.pop("threshold", info["threshold"])
    tuning = info.get("tuning") or {}
    source = {"run_dir": str(run_dir.resolve()), "fingerprint": info.get("fingerprint"),
              "threshold_from": "option" if threshold != info["threshold"] else
              (f"tuned on {tuning['split']}" if tuning else "default 0.5")}
    return TwoTierDetector(run_dir / MODEL_DIR, retriever=recipe.premise.retriever, top_k=recipe.premise.top_k,
                           max_length=recipe.data.max_length, threshold=threshold, source=source, **options)


def train(recipe: TwoTierRecipe, **kwargs: Any) -> Any:
    from ragtruth_spans.detectors.twotier.train import train as train_two_tier

    return train_two_tier(recipe, **kwargs)


FAMILY = Family(kind="two-tier", summary="RAGHalu-style: tier-1 no-info rules, tier-2 fine-tuned MiniLM "
                                         "cross-encoder per sentence",
                load=load, recipe=TwoTierRecipe, train=train)
