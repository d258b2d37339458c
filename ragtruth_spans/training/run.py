"""``ragtruth-spans train``: one entry for every detector family, dispatching on the recipe's ``kind``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.family import get_family
from ragtruth_spans.training.recipe import Recipe


@dataclass
class TrainResult:
    """A finished run: where it was written, what happened to the data (the family's
    :class:`~ragtruth_spans.training.data.RecordStats`), the trainer's metrics and the checkpoint resumed from."""

    output_dir: Path
    stats: Any
    metrics: dict[str, Any]
    resumed_from: str | None


def train(recipe: Recipe, *, console: Console | None = None) -> TrainResult:
    """Train the detector that ``recipe`` describes (its family's train function) into ``recipe.output_dir``."""
    family = get_family(recipe.kind)
    if family.train is None:
        raise InputError(f"detectors of kind {recipe.kind!r} are not trained", field="kind")
    return family.train(recipe, console=console or Console(stderr=True))
