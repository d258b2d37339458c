"""The stacked family (``kind: stacked``): word-level gradient boosting over support features and members'
scores (docs/STACKED.md). Trained only (no named detectors); options: ``device``, ``batch_size`` and ``runtime``
(``auto``: ONNX Runtime on the CPU when installed; ``torch``) of the sentence encoder, ``threshold`` (one word
threshold for every task instead of the tuned ones) and ``gate`` (the response score below which a response gets
no span, instead of the tuned one: higher, fewer false alarms); the word gap and fill stay as tuned."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.base import Detector
from ragtruth_spans.detectors.family import Family, check_options
from ragtruth_spans.detectors.stacked.recipe import StackedRecipe

OPTIONS = {"device", "batch_size", "runtime", "threshold", "gate"}


def load(run_dir: str | Path, **options: Any) -> Detector:
    """The detector a finished stacked run directory describes (combiner, decision, members, encoder)."""
    from ragtruth_spans.detectors.loader import load_detector
    from ragtruth_spans.detectors.recipes import read_finished_run
    from ragtruth_spans.detectors.shared.encoder_runtime import runtime_for_build
    from ragtruth_spans.detectors.stacked import combiner, response
    from ragtruth_spans.detectors.stacked.columns import ColumnBuilder, FoldMean, build_encoder
    from ragtruth_spans.detectors.stacked.detector import StackedDetector

    check_options("stacked", options, OPTIONS)
    threshold, gate = options.pop("threshold", None), options.pop("gate", None)
    if gate is not None and (isinstance(gate, bool) or not isinstance(gate, (int, float)) or not 0 <= gate <= 1):
        raise InputError(f"option gate must be a number in [0, 1], got {gate!r}", field="gate")
    run_dir = Path(run_dir)
    recipe, info = read_finished_run(run_dir, StackedRecipe, "decision", dict)
    members = {}
    for member in recipe.members:
        if member.recipe is None:
            members[member.name] = load_detector(member.detector, **member.options)
        elif member.refit:
            members[member.name] = load_detector(run_dir / member.run_paths()[0])
        else:
            members[member.name] = FoldMean([load_detector(run_dir / path) for path in member.run_paths()])
    options["runtime"] = runtime_for_build(recipe.features.precision, options.get("runtime"))
    encoder = build_encoder(recipe.features.encoder, layers=recipe.features.encoder_layers, **options)
    builder = ColumnBuilder(encoder, members, drop=recipe.features.drop, token_support=recipe.features.token_support)
    saved = info.get("columns")
    if not isinstance(saved, list) or not set(saved) <= set(builder.names) or len(set(saved)) != len(saved):
        raise InputError("run_info.json columns are not columns this version computes for the recipe (edited "
                         "after training, or trained by a newer version?)", path=run_dir)
    keep = None if saved == builder.names else [builder.names.index(name) for name in saved]  # an older run
    booster = combiner.load(run_dir, recipe.combiner.seeds)
    if booster.num_feature() != len(saved):
        raise InputError(f"run_info.json columns ({len(saved)}) differ from the combiner's "
                         f"({booster.num_feature()}): edited after training?", path=run_dir)
    decision = combiner.Decision.from_dict(info["decision"])
    if threshold is not None:
        decision = dataclasses.replace(decision, thresholds={"*": float(threshold)})
    if gate is not None:
        decision = dataclasses.replace(decision, response_threshold=float(gate))
    head = None
    if info.get("response") is not None:  # runs of recipes with `response: null` (or older runs) have no head
        if not isinstance(info["response"], dict):
            raise InputError("run_info.json: response must be an object", path=run_dir)
        head = (response.load(run_dir), response.Calibration.from_dict(info["response"].get("calibration") or {}))
    return StackedDetector(booster, builder, decision, head=head,
                           run_info={"run_dir": str(run_dir.resolve()), "fingerprint": info.get("fingerprint")},
                           columns=keep)


def train(recipe: StackedRecipe, **kwargs: Any) -> Any:
    from ragtruth_spans.detectors.stacked.train import train as train_stacked

    return train_stacked(recipe, **kwargs)


FAMILY = Family(kind="stacked", summary="word-level gradient boosting over context-support features and other "
                                        "detectors' scores (trained combiner, tuned decision)",
                load=load, recipe=StackedRecipe, train=train, extra_sources="weighted")
