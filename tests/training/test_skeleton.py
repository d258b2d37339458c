"""The one rule every family's training starts from (training/skeleton.py): the training records are exactly
``selected_training_records`` (the stacked family's records and order, so the recommended detector's figures, stay
as they were), the eval records are the eval split's records of ``data.tasks`` in file order, and the run_info
``data`` header has the same keys in every family."""

from __future__ import annotations

from pathlib import Path

from ragtruth_spans.core.jsonl import write_records
from ragtruth_spans.detectors.recipes import load_recipe
from ragtruth_spans.training.data import (
    RecordStats,
    load_eval_records,
    load_split,
    select_records,
    selected_training_records,
)
from ragtruth_spans.training.data_recipe import DataSection
from ragtruth_spans.training.skeleton import data_record, eval_records, select_data


def _prepared(tmp_path: Path) -> Path:
    train, _ = load_split(DataSection(), "train")  # the embedded sample: its train split as train, test as dev
    test, _ = load_split(DataSection(), "test")
    write_records(tmp_path / "train.jsonl", train)
    write_records(tmp_path / "dev.jsonl", test)
    return tmp_path


def test_the_stacked_recipe_selects_the_records_it_always_did(tmp_path):
    prepared = _prepared(tmp_path)
    for overrides in ([], ["data.clean_fraction=0.5", "data.max_examples=30", "data.tasks=[QA,Summary]"]):
        data = load_recipe("recommended-cpu", [f"data.prepared_dir={prepared}", *overrides]).data
        assert data.augment is not None
        selected = select_data(data, RecordStats())
        before, source = selected_training_records(data, RecordStats())
        assert [r.id for r in selected.train] == [r.id for r in before] and selected.source == source
        held_out = load_eval_records(data)
        assert held_out is not None and selected.eval is not None
        real = [r.id for r in held_out[0] if r.task_type in data.tasks]
        assert [r.id for r in selected.eval[:len(real)]] == real  # then data.synth's generated held-out records
        assert len(selected.eval) == len(real) + (data.synth.eval_count if data.synth else 0)


def test_the_eval_rule_keeps_every_record_of_the_tasks_unless_sampled_as_training(tmp_path):
    data = DataSection(prepared_dir=str(_prepared(tmp_path)), eval_split="dev", tasks=["QA"], clean_fraction=0.2,
                       max_examples=3)
    stats = RecordStats()
    kept, _ = eval_records(data, stats)
    every = load_eval_records(data)[0]
    assert [r.id for r in kept] == [r.id for r in every if r.task_type == "QA"]
    assert stats.records == len(every) and stats.other_tasks == len(every) - len(kept)
    sampled, _ = eval_records(data, as_training=True)
    assert [r.id for r in sampled] == [r.id for r in select_records(every, data, RecordStats())]
    assert eval_records(DataSection()) is None


def test_the_run_info_data_header_has_the_same_keys_for_every_family(tmp_path):
    data = DataSection(prepared_dir=str(_prepared(tmp_path)), eval_split="dev")
    trained = data_record(select_data(data, RecordStats()), eval_split="dev", examples_sha256="x")
    kept, source = eval_records(data)
    tuned_only = data_record(None, eval_split="dev", eval_only=(kept, source, RecordStats()))
    without_eval = data_record(select_data(DataSection(), RecordStats()), eval_split=None)
    assert {"source", "counts", "eval"} <= set(trained) and {"source", "counts", "eval"} <= set(tuned_only)
    assert set(trained["eval"]) == set(tuned_only["eval"]) == {"split", "source", "counts"}
    assert tuned_only["counts"] is None and without_eval["eval"] is None and trained["counts"]["records"] > 0
