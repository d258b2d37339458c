"""``ragtruth-spans train``: one entry for every detector family, dispatching on the recipe's ``kind``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.family import get_family
from ragtruth_spans.training.data import split_file, training_file
from ragtruth_spans.training.recipe import Recipe
from ragtruth_spans.training.run_dir import claim_output_dir, run_fingerprint


@dataclass
class TrainResult:
    """A finished run: where it was written, what happened to the data (the family's
    :class:`~ragtruth_spans.training.data.RecordStats`), the trainer's metrics and the checkpoint resumed from."""

    output_dir: Path
    stats: Any
    metrics: dict[str, Any]
    resumed_from: str | None


def train(recipe: Recipe, *, console: Console | None = None, overwrite: bool = False,
          resume: bool = False) -> TrainResult:
    """Train the detector that ``recipe`` describes (its family's train function) into ``recipe.output_dir``.

    The run directory rules (:mod:`ragtruth_spans.training.run_dir`) are applied first: a new run starts, an
    unfinished run of the same fingerprint resumes, anything else is refused unless ``overwrite`` (start over) or
    ``resume`` (continue a run of other settings). The family's train function gets ``resume`` (continue from
    the last checkpoint of ``output_dir``) and the ``fingerprint`` to record in ``run_info.json``.
    """
    family = get_family(recipe.kind)
    if family.train is None:
        raise InputError(f"detectors of kind {recipe.kind!r} are not trained", field="kind")
    data_files = [training_file(recipe.data)]
    if recipe.data.eval_split is not None:
        data_files.append(split_file(recipe.data, recipe.data.eval_split))
    fingerprint = run_fingerprint(recipe, data_files)
    resuming = claim_output_dir(recipe.output_dir, fingerprint, overwrite=overwrite, resume=resume)
    return family.train(recipe, console=console or Console(stderr=True), resume=resuming, fingerprint=fingerprint)


def whole_run_train_loss(log_history: list[dict[str, Any]]) -> float | None:
    """The mean training loss of a whole run, resumed ones included: the logged losses (each the mean over the
    steps since the previous log) weighted by the steps they cover. The trainer's own ``train_loss`` covers only
    the steps of the last session. None when nothing was logged."""
    total = steps = 0.0
    previous = 0
    for entry in log_history:
        if "loss" in entry and "step" in entry:
            width = max(int(entry["step"]) - previous, 1)
            total += float(entry["loss"]) * width
            steps += width
            previous = int(entry["step"])
    return total / steps if steps else None
