"""Splitting by source: RAGTruth's split with sampled dev sources, or a seeded re-split by shares or counts."""

from __future__ import annotations

import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.types import TASK_TYPES, Record
from ragtruth_spans.data.splits import parse_split_spec, split_by_source


def records(n_sources: int = 20) -> list[Record]:
    return [Record(id=f"{task}-{s}-{m}", source_id=f"{task}-{s}", task_type=task, model=f"m{m}", split="test",
                   quality="good", response="r", context="c")
            for task in TASK_TYPES for s in range(n_sources) for m in range(3)]


def test_shares_cut_each_task_and_keep_sources_whole():
    data = records(20)
    ids = split_by_source(data, {"train": 0.7, "dev": 0.1, "test": 0.2}, seed=0)
    assert [len(ids[s]) for s in ("train", "dev", "test")] == [42, 6, 12]  # 14 / 2 / 4 sources per task
    assert set(ids["train"]).isdisjoint(ids["test"]) and set(ids["dev"]).isdisjoint(ids["test"])
    assert sum(len(v) for v in ids.values()) == 60
    for task in TASK_TYPES:
        assert sum(sid.startswith(task) for sid in ids["test"]) == 4
    assert split_by_source(data, {"train": 0.7, "dev": 0.1, "test": 0.2}, seed=0) == ids  # seeded
    assert split_by_source(data, {"train": 0.7, "dev": 0.1, "test": 0.2}, seed=1) != ids


def test_counts_per_task_leave_the_rest_to_train():
    ids = split_by_source(records(20), {"dev": 3, "test": 5}, seed=0)
    assert [len(ids[s]) for s in ("train", "dev", "test")] == [36, 9, 15]
    with pytest.raises(InputError, match="only 20 exist"):
        split_by_source(records(20), {"dev": 10, "test": 11}, seed=0)


def test_spec_parsing_and_errors():
    assert parse_split_spec("train=0.8, test=0.2") == {"train": 0.8, "test": 0.2}
    assert parse_split_spec("dev=10,test=20") == {"dev": 10.0, "test": 20.0}
    for bad, message in (("train=0.5,test=0.2", "sum to 1"), ("valid=0.2", "SPLIT=VALUE"),
                         ("test=x", "not a number"), ("test=0.5,test=0.5", "each once"), ("", "non-negative")):
        with pytest.raises(InputError, match=message):
            parse_split_spec(bad)
