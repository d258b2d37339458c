"""``data.extra``: training-only sources appended to the training records (marked, counted, fingerprinted) and
refused by the families that cannot use them."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import write_records
from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.detectors.family import get_family
from ragtruth_spans.detectors.recipes import load_recipe
from ragtruth_spans.detectors.train import check_extra_sources
from ragtruth_spans.runs.run_dir import run_fingerprint
from ragtruth_spans.training.data import (
    RecordStats,
    extra_files,
    load_eval_records,
    record_origin,
    record_weight,
    selected_training_records,
)
from ragtruth_spans.training.data_recipe import DataSection


def _record(i: int, task: str = "Summary", split: str = "train", spans: bool = True) -> Record:
    response = f"The plant opened in {1990 + i}."
    return Record(id=f"r{i}", source_id=f"s{i}", task_type=task, model="m", split=split, quality="good",
                  response=response, context=f"The plant opened in {1990 + i}. It makes paper.",
                  spans=[Span(20, 24, "Evident Conflict", response[20:24])] if spans else [])


@pytest.fixture()
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    main, extra = tmp_path / "main", tmp_path / "extra"
    write_records(main / "train.jsonl", [_record(0), _record(1, spans=False)])
    write_records(main / "dev.jsonl", [_record(2, split="dev")])
    write_records(extra / "train.jsonl", [_record(10), _record(3, task="QA"), _record(4, spans=False)])
    write_records(extra / "dev.jsonl", [_record(5, split="dev")])
    return main, extra


def test_extra_records_are_appended_to_training_only_marked_and_counted(dirs):
    main, extra = dirs
    data = DataSection(prepared_dir=str(main), eval_split="dev", tasks=["Summary"],
                       extra=[{"dir": str(extra), "split": ["train", "dev"], "weight": 0.5}])
    stats = RecordStats()
    records, source = selected_training_records(data, stats)
    origins = [record_origin(r) for r in records]
    assert origins == ["real", "real", "extra", "extra", "extra"]  # the QA record of extra is left out
    extra_records = [r for r in records if record_origin(r) == "extra"]
    assert {r.id for r in extra_records} == {"r10#extra-0", "r4#extra-0", "r5#extra-0"}
    assert all(r.source_id.startswith("extra-0:") for r in extra_records)  # never a real source's id
    assert {r.source_id for r in records if record_origin(r) == "real"} == {"s0", "s1"}
    assert [record_weight(r, data) for r in records] == [1.0, 1.0, 0.5, 0.5, 0.5]
    assert stats.extra == [{"dir": str(extra), "files": [str(extra / "train.jsonl"), str(extra / "dev.jsonl")],
                            "records": 4, "other_tasks": 1, "kept": 3, "with_spans": 2, "weight": 0.5}]
    assert stats.by_origin() == {"real": 2, "augmented": 0, "extra": 3}
    assert "3 extra training-only record(s) from 1 source(s)" in source
    eval_records, _ = load_eval_records(data)
    assert [r.id for r in eval_records] == ["r2"]  # never in the eval split


def test_augmentation_never_touches_extra_records(dirs):
    main, extra = dirs
    data = DataSection(prepared_dir=str(main), augment={"kinds": ["number"]}, extra=[str(extra)])
    stats = RecordStats()
    records, _ = selected_training_records(data, stats)
    assert [record_origin(r) for r in records] == ["real", "real", "augmented", "extra", "extra", "extra"]
    assert stats.by_origin() == {"real": 2, "augmented": 1, "extra": 3}


def test_a_bare_directory_and_a_missing_file(dirs, tmp_path):
    main, extra = dirs
    assert DataSection(extra=str(extra)).extra[0].dir == str(extra)
    assert DataSection(extra=None).extra == []
    data = DataSection(prepared_dir=str(main), extra=[{"dir": str(tmp_path / "nowhere")}])
    with pytest.raises(InputError, match="no such file") as error:
        selected_training_records(data, RecordStats())
    assert error.value.field == "data.extra[0].split"
    with pytest.raises(ValueError, match="distinct splits"):
        DataSection(extra=[{"dir": "x", "split": ["train", "train"]}])
    with pytest.raises(ValueError):
        DataSection(extra=[{"dir": "x", "weight": 0}])


def test_the_fingerprint_holds_the_extra_files_and_is_unchanged_without_them(dirs):
    main, extra = dirs
    plain = load_recipe("recommended-cpu", [f"data.prepared_dir={main}"])
    assert "extra" not in run_fingerprint(plain, [main / "train.jsonl"])["recipe"]["data"]
    with_extra = load_recipe("recommended-cpu", [f"data.prepared_dir={main}", f"data.extra=[{extra}]"])
    files = [main / "train.jsonl", *extra_files(with_extra.data)]
    first = run_fingerprint(with_extra, files)
    assert str(extra / "train.jsonl") in first["data_sha256"]
    write_records(extra / "train.jsonl", [_record(7)])
    assert run_fingerprint(with_extra, files)["fingerprint"] != first["fingerprint"]


def test_families_that_cannot_use_extra_sources_refuse_them(dirs):
    main, extra = dirs
    token = load_recipe("all-minilm-l6-v2/token-cls", [f"data.prepared_dir={main}",
                                                       f"data.extra=[{{dir: {extra}, weight: 2}}]"])
    with pytest.raises(InputError, match="cannot weight records") as error:
        check_extra_sources(token, get_family("token-classification"))
    assert error.value.field == "data.extra[0].weight"
    token.data.extra[0].weight = 1.0
    check_extra_sources(token, get_family("token-classification"))  # unweighted: accepted
    twotier = load_recipe("all-minilm-l6-v2/two-tier", [f"data.prepared_dir={main}", f"data.extra=[{extra}]"])
    with pytest.raises(InputError, match="do not train on extra sources") as error:
        check_extra_sources(twotier, get_family("two-tier"))
    assert error.value.field == "data.extra"


def test_the_training_summary_counts_records_by_origin(dirs):
    from ragtruth_spans.reporting.console import threshold_decision, training_data_summary

    main, extra = dirs
    data = DataSection(prepared_dir=str(main), augment={"kinds": ["number"]}, extra=[str(extra)])
    stats = RecordStats()
    selected_training_records(data, stats)
    text = training_data_summary(stats, "somewhere", 512).plain
    assert "training records by origin: 2 real, 1 augmented (synthetic edits of clean ones), 3 extra" in text
    assert f"extra {extra}: 3 of 3 records kept (2 with spans; 0 of other tasks), weight 1" in text
    assert threshold_decision(0.35, True, "dev", "span F1 0.400") == (
        "a token is flagged when its hallucination probability is at least 0.35 (tuned on dev, span F1 0.400)")


@pytest.mark.parametrize("split", ["dev", "train", "test"])
def test_extra_may_not_read_the_runs_own_prepared_files(dirs, split):
    main, _ = dirs
    write_records(main / "test.jsonl", [_record(8, split="test")])
    data = DataSection(prepared_dir=str(main), eval_split="dev", extra=[{"dir": str(main), "split": split}])
    with pytest.raises(InputError, match=f"the run's own '{split}' split") as error:
        selected_training_records(data, RecordStats())
    assert error.value.field == "data.extra[0]"


@pytest.mark.parametrize(("clash", "held", "how"), [
    (lambda r: r, "eval split 'dev'", "id"),                                  # a copy of an eval record
    (lambda r: Record(**{**r.__dict__, "id": "other"}), "eval split 'dev'", "context"),  # its context, new id
    (lambda r: Record(**{**_record(0).__dict__, "id": "fresh"}), "training split 'train'", "context"),
    (lambda r: Record(**{**_record(9).__dict__, "id": "r1"}), "training split 'train'", "id"),
    (lambda r: Record(**{**_record(8).__dict__, "id": "t"}), "held-out split 'test'", "context"),
])
def test_extra_records_overlapping_the_runs_records_are_refused(dirs, tmp_path, clash, held, how):
    main, _ = dirs
    write_records(main / "test.jsonl", [_record(8, split="test")])
    other = tmp_path / "other"
    write_records(other / "train.jsonl", [_record(20), clash(_record(2, split="dev"))])
    data = DataSection(prepared_dir=str(main), eval_split="dev", extra=[str(other)])
    with pytest.raises(InputError, match=f"has the {how} of .*the run's {held}") as error:
        selected_training_records(data, RecordStats())
    assert error.value.field == "data.extra[0]" and str(other / "train.jsonl") in str(error.value)


def test_generated_records_weigh_data_synth_weight(dirs):
    main, _ = dirs
    data = DataSection(prepared_dir=str(main), tasks=["Summary"], synth={"count": 3, "weight": 2.5})
    records, _ = selected_training_records(data, RecordStats())
    weights = {record_origin(r): set() for r in records}
    for record in records:
        weights[record_origin(record)].add(record_weight(record, data))
    assert weights == {"real": {1.0}, "augmented": {2.5}}  # the three generated records, the real ones untouched
    assert sum(record_weight(r, data) == 2.5 for r in records) == 3


def test_a_synth_weight_is_refused_where_records_cannot_be_weighted(dirs):
    main, _ = dirs
    token = load_recipe("all-minilm-l6-v2/token-cls", [f"data.prepared_dir={main}", "data.synth={weight: 2}"])
    with pytest.raises(InputError, match="data.synth.weight") as error:
        check_extra_sources(token, get_family("token-classification"))
    assert error.value.field == "data.synth.weight"
    stacked = load_recipe("recommended-cpu", [f"data.prepared_dir={main}", "data.synth.weight=2"])
    check_extra_sources(stacked, get_family("stacked"))  # the stacked family weights its rows: accepted
