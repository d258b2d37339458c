"""A tiny prepared NLI directory in the pair format of `ragtruth-spans import nli`, and a tiny recipe over it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

THINGS = ("hotel", "museum", "bridge", "library", "station", "garden", "tower", "market")
COLOURS = ("red", "blue", "green", "white")


def pair_rows(split: str, count: int) -> list[dict]:
    """Deterministic pairs: the premise's colour entails, its negation contradicts, a size is neutral (cues a
    tiny model learns in a few steps); every fourth row comes from a binary set (FEVER-like) whose negatives are
    ``not_entailment``."""
    rows = []
    for i in range(count):
        thing, colour = THINGS[i % len(THINGS)], COLOURS[(i // len(THINGS)) % len(COLOURS)]
        premise = f"The {thing} in the old town is {colour}. It opened in {1950 + i}."
        kind = i % 3
        hypothesis = [f"The {thing} is {colour}.", f"The {thing} is not {colour}.", f"The {thing} is very large."][kind]
        label = ["entailment", "contradiction", "neutral"][kind]
        binary = i % 4 == 3
        if binary and label != "entailment":
            label = "not_entailment"
        rows.append({"id": f"{split}-{i}", "premise": premise, "hypothesis": hypothesis, "label": label,
                     "source": "fever_rte" if binary else "snli", "split": split, "binary": binary})
    return rows


def write_nli_dir(folder: Path, sizes: dict[str, int] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for split, count in (sizes or {"train": 48, "dev": 12, "test": 12}).items():
        lines = "".join(json.dumps(row) + "\n" for row in pair_rows(split, count))
        (folder / f"{split}.jsonl").write_text(lines, encoding="utf-8")
    return folder


@pytest.fixture()
def nli_dir(tmp_path: Path) -> Path:
    return write_nli_dir(tmp_path / "nli")


def _tiny_recipe(nli: Path, out: Path, *extra: str):
    """The shipped recipe on a tiny random BERT over ``nli``: 2 epochs of 6 steps, a checkpoint every 3."""
    from ragtruth_spans.detectors.recipes import load_recipe

    return load_recipe("entailment-minilm", [
        "model.name_or_path=tiny", "model.max_length=64", f"stages=[{{name: nli, data: [{nli}], epochs: 2, "
        "learning_rate: 0.001}]", "training.per_device_batch_size=8", "training.save_steps=3",
        "training.logging_steps=2", "training.warmup_ratio=0.0", "evaluation.batch_size=16",
        "detection.window_sentences=1", f"output_dir={out}", *extra])


@pytest.fixture()
def tiny_recipe():
    """``tiny_recipe(nli_dir, output_dir, *overrides)``: the shipped recipe on a tiny random BERT."""
    return _tiny_recipe
