"""How ``prepare`` assigns records to train / dev / test — always by source, so no source (and none of its six
responses) sits in two splits.

- **RAGTruth's own split** (default): ``test`` stays ``test``; ``dev`` takes ``dev_per_task`` source ids per task,
  sampled with ``random.Random(seed)`` from the sorted ids of the sources that have ``train`` responses (tasks in
  the order QA, Summary, Data2txt); the other ``train`` responses stay ``train``.
- **Re-split by source** (``split_by_source``): RAGTruth's split is ignored. Per task, the sorted source ids are
  shuffled with ``random.Random(seed)`` and cut in the order train, dev, test: by **shares** (``train=0.7,
  dev=0.1,test=0.2``; each split gets ``round(cumulative share x sources)`` minus what the splits before it got)
  or by **counts** per task (``dev=10,test=20``: integers; sources left over go to train). Use it for a data set
  whose records all carry one split, such as a slice of the RAGTruth test split.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.types import SPLITS, TASK_TYPES, Record


def parse_split_spec(text: str) -> dict[str, float]:
    """``"train=0.7,dev=0.1,test=0.2"`` → ``{"train": 0.7, "dev": 0.1, "test": 0.2}`` (validated: known split
    names, each at most once; all shares summing to 1, or all non-negative integer counts)."""
    spec: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep or name not in SPLITS or name in spec:
            raise InputError(f"{part!r} is not SPLIT=VALUE with SPLIT one of {', '.join(SPLITS)} (each once)",
                             field="split_by_source")
        try:
            spec[name] = float(value)
        except ValueError:
            raise InputError(f"{part!r}: {value!r} is not a number", field="split_by_source") from None
    check_split_spec(spec)
    return spec


def check_split_spec(spec: Mapping[str, float]) -> None:
    """Shares in [0, 1] summing to 1, or non-negative integer counts; anything else is an :class:`InputError`."""
    values = list(spec.values())
    if not values or any(v < 0 or not math.isfinite(v) for v in values):
        raise InputError(f"needs non-negative values, got {dict(spec)}", field="split_by_source")
    counts = all(float(v).is_integer() for v in values) and sum(values) > 1
    if not counts and not math.isclose(sum(values), 1.0, abs_tol=1e-9):
        raise InputError(f"shares must sum to 1 (or give integer counts per task), got {dict(spec)}",
                         field="split_by_source")


def split_by_source(records: Sequence[Record], spec: Mapping[str, float], seed: int) -> dict[str, list[str]]:
    """``{split: sorted source ids}`` for a re-split by source (see the module docstring)."""
    check_split_spec(spec)
    counts = all(float(v).is_integer() for v in spec.values()) and sum(spec.values()) > 1
    rng = random.Random(seed)
    chosen: dict[str, list[str]] = {name: [] for name in SPLITS}
    for task in TASK_TYPES:
        ids = sorted({r.source_id for r in records if r.task_type == task})
        rng.shuffle(ids)
        if counts:
            wanted = {name: int(spec.get(name, 0)) for name in ("dev", "test")}
            if sum(wanted.values()) > len(ids):
                raise InputError(f"{task}: {sum(wanted.values())} dev + test sources asked, only {len(ids)} "
                                 "exist", field="split_by_source")
            sizes = {"train": len(ids) - sum(wanted.values()), **wanted}
        else:
            sizes, done, cumulative = {}, 0, 0.0
            for name in SPLITS:
                cumulative += spec.get(name, 0.0)
                sizes[name] = round(cumulative * len(ids)) - done
                done += sizes[name]
        start = 0
        for name in SPLITS:
            chosen[name].extend(ids[start:start + sizes[name]])
            start += sizes[name]
    return {name: sorted(ids) for name, ids in chosen.items()}


def select_dev_sources(train: Sequence[Record], dev_per_task: int, seed: int,
                       warnings: list[str]) -> dict[str, list[str]]:
    """``{task: sorted source ids}`` moved from RAGTruth's train split to dev (see the module docstring)."""
    rng = random.Random(seed)
    chosen: dict[str, list[str]] = {}
    for task in TASK_TYPES:
        ids = sorted({r.source_id for r in train if r.task_type == task})
        k = min(dev_per_task, len(ids))
        chosen[task] = sorted(rng.sample(ids, k))
        if ids and k == len(ids) and dev_per_task > 0:
            warnings.append(f"{task}: only {len(ids)} train source(s), all moved to dev "
                            f"(--dev-per-task {dev_per_task}); train has no {task} records")
    return chosen


def assign_splits(kept: Sequence[Record], *, dev_per_task: int, seed: int,
                  split_spec: Mapping[str, float] | None, warnings: list[str]
                  ) -> tuple[dict[str, list[Record]], dict[str, list[str]], dict[str, list[str]] | None]:
    """``(records by split, dev source ids per task, source ids per split of a re-split or None)``; each
    record's ``split`` is set to its split."""
    if split_spec is not None:
        split_ids = split_by_source(kept, split_spec, seed)
        where = {sid: name for name, sids in split_ids.items() for sid in sids}
        by_split = {name: [r for r in kept if where[r.source_id] == name] for name in SPLITS}
        dev_ids = {task: sorted({r.source_id for r in by_split["dev"] if r.task_type == task}) for task in TASK_TYPES}
    else:
        split_ids = None
        train = [r for r in kept if r.split == "train"]
        dev_ids = select_dev_sources(train, dev_per_task, seed, warnings)
        dev = {sid for sids in dev_ids.values() for sid in sids}
        by_split = {"train": [r for r in train if r.source_id not in dev],
                    "dev": [r for r in train if r.source_id in dev],
                    "test": [r for r in kept if r.split == "test"]}
    for name, records in by_split.items():
        for record in records:
            record.split = name
    return by_split, dev_ids, split_ids
