"""Write a source-complete subset of a prepared split: every response of ``--per-task`` sources per task.

Usage::

    python lab/probes/subset_by_source.py data/ragtruth/test.jsonl --per-task 5 --seed 0 --out test-5src.jsonl

RAGTruth gives about six responses per source; keeping whole sources keeps best-of-N selection meaningful on the
subset (every candidate of a chosen source is there). Sources are drawn per task with ``random.Random(seed)`` from
the sorted source ids, tasks in sorted order, so the subset is the same on every machine. (The draw is the one
``data.splits.select_dev_sources`` makes for dev, but over tasks in sorted rather than ``TASK_TYPES`` order; the
subsets measured in docs/BENCHMARKS.md were made this way, so it stays.) Used where a detector is too slow on CPU for a
whole split (docs/BENCHMARKS.md states the subset wherever a figure comes from one).
"""

from __future__ import annotations

import argparse
import random
from collections import defaultdict
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--per-task", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    from ragtruth_spans.core.jsonl import read_records, write_records

    records = read_records(args.data)
    sources: dict[str, set[str]] = defaultdict(set)
    for record in records:
        sources[record.task_type].add(record.source_id)
    rng = random.Random(args.seed)
    chosen = {task: set(rng.sample(sorted(ids), min(args.per_task, len(ids)))) for task, ids in sorted(sources.items())}
    subset = [r for r in records if r.source_id in chosen[r.task_type]]
    write_records(args.out, subset)
    counts = {task: sum(r.task_type == task for r in subset) for task in chosen}
    print(f"{len(subset)} responses of {sum(map(len, chosen.values()))} sources ({counts}) -> {args.out}")


if __name__ == "__main__":
    main()
