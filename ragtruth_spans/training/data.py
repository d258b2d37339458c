"""The records a recipe trains on, as every family reads them: which file, which tasks, how many clean ones.

Every record that is left out is counted in :class:`RecordStats` (and written into the run's ``run_info.json``).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import read_records
from ragtruth_spans.core.types import Record
from ragtruth_spans.training.recipe import SAMPLE, DataSection


@dataclass
class RecordStats:
    """What happened to the records before they became training examples (every drop is counted).
    Families subclass it to add their own counts (e.g. shortened contexts, windows)."""

    records: int = 0
    other_tasks: int = 0
    with_spans: int = 0
    clean: int = 0
    clean_kept: int = 0
    over_max_examples: int = 0
    examples: int = 0
    augmented: dict[str, dict[str, int]] = field(default_factory=dict)


def split_file(data: DataSection, split: str) -> Path | None:
    """``<prepared_dir>/<split>.jsonl``, or None for the embedded sample (read on the fly)."""
    return None if data.prepared_dir == SAMPLE else Path(data.prepared_dir) / f"{split}.jsonl"


def training_file(data: DataSection) -> Path | None:
    """The prepared file a recipe trains on (None for the embedded sample)."""
    return split_file(data, data.split)


def load_split(data: DataSection, split: str, *, field: str = "data.split") -> tuple[list[Record], str]:
    """The records of one split and a description of where they came from: ``<prepared_dir>/<split>.jsonl``
    written by ``ragtruth-spans prepare``, or, with ``prepared_dir: sample``, the embedded sample's RAGTruth split
    (``train`` or ``test``; it has no dev split). ``field``: the recipe field that named ``split`` (for errors)."""
    path = split_file(data, split)
    if path is None:
        from ragtruth_spans.data.ragtruth import RAGTRUTH_SPLITS, load_ragtruth, sample_data_dir

        if split not in RAGTRUTH_SPLITS:
            raise InputError(f"the embedded sample has the splits {' and '.join(RAGTRUTH_SPLITS)}, not {split!r} "
                             "(prepare it with `ragtruth-spans prepare --sample` for a dev split)",
                             field=field)
        return load_ragtruth(sample_data_dir(), split=split), f"embedded sample ({sample_data_dir()}), split {split}"
    return read_records(path), str(path)


def load_training_records(data: DataSection) -> tuple[list[Record], str]:
    """The records to train on (``data.split``) and a description of where they came from."""
    return load_split(data, data.split)


def load_eval_records(data: DataSection) -> tuple[list[Record], str] | None:
    """The records evaluated during training (``data.eval_split``), or None when the recipe names none."""
    return None if data.eval_split is None else load_split(data, data.eval_split, field="data.eval_split")


def selected_training_records(data: DataSection, stats: RecordStats) -> tuple[list[Record], str]:
    """The records to train on after :func:`select_records` (counted in ``stats``) and where they came from;
    none left is an :class:`InputError`."""
    records, source = load_training_records(data)
    records = select_records(records, data, stats)
    if not records:
        raise InputError(f"no training records left from {source} (tasks={data.tasks}, "
                         f"clean_fraction={data.clean_fraction})")
    if data.augment is not None:
        from ragtruth_spans.data.augment import augment

        new, counts = augment(records, kinds=data.augment.kinds, share=data.augment.share, seed=data.augment.seed,
                              rounds=data.augment.rounds)
        stats.augmented = counts.to_dict()
        records = records + new
    return records, source


def select_records(records: Sequence[Record], data: DataSection, stats: RecordStats) -> list[Record]:
    """Keep ``data.tasks``; keep a seeded ``clean_fraction`` of the clean records; cap at ``max_examples``."""
    stats.records = len(records)
    kept = [r for r in records if r.task_type in data.tasks]
    stats.other_tasks = len(records) - len(kept)
    clean_idx = [i for i, r in enumerate(kept) if not r.spans]
    stats.clean = len(clean_idx)
    stats.with_spans = len(kept) - len(clean_idx)
    n_clean = round(data.clean_fraction * len(clean_idx))
    rng = random.Random(data.seed)
    drop = set(clean_idx) - set(rng.sample(clean_idx, n_clean))
    stats.clean_kept = n_clean
    kept = [r for i, r in enumerate(kept) if i not in drop]
    if data.max_examples is not None and len(kept) > data.max_examples:
        stats.over_max_examples = len(kept) - data.max_examples
        kept = [kept[i] for i in sorted(rng.sample(range(len(kept)), data.max_examples))]
    return kept


def examples_sha256(examples: Sequence[dict[str, Any]]) -> str:
    """sha256 of the exact training examples (canonical JSON lines, in training order)."""
    h = hashlib.sha256()
    for ex in examples:
        h.update(json.dumps(ex, ensure_ascii=False, sort_keys=True).encode("utf-8") + b"\n")
    return h.hexdigest()
