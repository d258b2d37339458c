"""``prepare``: splits grouped by source, seeded dev sampling, quality filter, accounting, stats.json, CLI."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtruth_spans import sample_data_dir
from ragtruth_spans.cli import app
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import read_records
from ragtruth_spans.core.types import SPLITS, TASK_TYPES
from ragtruth_spans.data.prepare import prepare


def read_split_files(out: Path) -> dict[str, list]:
    return {name: read_records(out / f"{name}.jsonl") for name in SPLITS}


def assert_counts_add_up(stats: dict, splits: dict) -> None:
    resp, lab = stats["responses"], stats["labels"]
    assert resp["input"] == resp["written"] + resp["filtered"]
    assert resp["written"] == sum(len(rs) for rs in splits.values())
    assert resp["filtered"] == sum(resp["filtered_by_quality"].values()) == sum(resp["filtered_by_split"].values())
    assert lab["input"] == lab["exact"] + lab["repaired"] + lab["unrepairable"]
    assert lab["spans"] == lab["exact"] + lab["repaired"] - lab["duplicates_removed"]
    assert lab["spans"] == lab["spans_written"] + lab["spans_in_filtered_responses"]
    assert lab["spans_written"] == sum(len(r.spans) for rs in splits.values() for r in rs)
    for name, rs in splits.items():
        assert stats["splits"][name]["responses"] == len(rs)
        assert stats["splits"][name]["spans"] == sum(len(r.spans) for r in rs)
        assert sum(t["responses"] for t in stats["splits"][name]["by_task"].values()) == len(rs)


def test_prepare_sample(tmp_path):
    stats = prepare(sample_data_dir(), tmp_path, dev_per_task=2, seed=0)
    splits = read_split_files(tmp_path)
    on_disk = json.loads((tmp_path / "stats.json").read_text("utf-8"))
    assert on_disk == json.loads(json.dumps(stats.to_dict()))
    assert_counts_add_up(on_disk, splits)
    assert (on_disk["responses"]["input"], on_disk["responses"]["written"]) == (76, 73)
    assert on_disk["responses"]["filtered_by_quality"] == {"incorrect_refusal": 1, "truncated": 2}
    assert on_disk["labels"]["repaired"] == 1 and on_disk["labels"]["repaired_labels"][0]["id"] == "5045"
    assert on_disk["warnings"] == []
    for name, rs in splits.items():
        assert {r.split for r in rs} == {name}
        assert all(r.quality == "good" for r in rs)
        for r in rs:
            assert all(r.response[s.start:s.end] == s.text for s in r.spans)
    # grouped by source: no source id in two splits
    ids = {name: {r.source_id for r in rs} for name, rs in splits.items()}
    assert not (ids["train"] & ids["dev"]) and not (ids["train"] & ids["test"]) and not (ids["dev"] & ids["test"])
    # dev: dev_per_task sources per task, all taken from RAGTruth train; test is RAGTruth test
    for task in TASK_TYPES:
        assert len({r.source_id for r in splits["dev"] if r.task_type == task}) == 2
        assert sorted(stats.dev_source_ids[task]) == sorted({r.source_id for r in splits["dev"]
                                                             if r.task_type == task})
    raw = [json.loads(x) for x in (sample_data_dir() / "response.jsonl").read_text("utf-8").splitlines()]
    raw_split = {r["id"]: r["split"] for r in raw}
    assert all(raw_split[r.id] == "train" for r in splits["train"] + splits["dev"])
    assert {r.id for r in splits["test"]} == {r["id"] for r in raw if r["split"] == "test" and r["quality"] == "good"}


def test_prepare_is_deterministic_under_seed(tmp_path):
    prepare(sample_data_dir(), tmp_path / "a", dev_per_task=1, seed=7)
    prepare(sample_data_dir(), tmp_path / "b", dev_per_task=1, seed=7)
    for name in ("train.jsonl", "dev.jsonl", "test.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    dev_sets = {tuple(prepare(sample_data_dir(), tmp_path / f"s{seed}", dev_per_task=1, seed=seed)
                      .dev_source_ids["QA"]) for seed in range(6)}
    assert len(dev_sets) > 1  # the seed matters


def test_quality_filter(tmp_path):
    everything = prepare(sample_data_dir(), tmp_path / "all", dev_per_task=1, keep_quality=None).to_dict()
    assert everything["responses"]["written"] == 76 and everything["keep_quality"] == "all"
    assert prepare(sample_data_dir(), tmp_path / "all2", dev_per_task=1, keep_quality=["all"]).to_dict() \
        ["responses"]["filtered"] == 0
    some = prepare(sample_data_dir(), tmp_path / "some", dev_per_task=1, keep_quality=["good", "truncated"])
    d = some.to_dict()
    assert d["responses"]["written"] == 75 and d["responses"]["filtered_by_quality"] == {"incorrect_refusal": 1}
    assert d["keep_quality"] == ["good", "truncated"]


TRAIN_EMPTY = ("split 'train' has no records (train.jsonl is empty); if every response carries one RAGTruth split "
               "(e.g. a slice of its test split), re-split them by source: --split-by-source "
               "train=0.7,dev=0.1,test=0.2")


def test_empty_splits_warn_not_crash(tmp_path, shared_sample_dir):
    with pytest.warns(UserWarning) as caught:
        stats = prepare(shared_sample_dir, tmp_path, dev_per_task=50)
    assert [str(w.message) for w in caught] == stats.warnings == [
        TRAIN_EMPTY, "split 'dev' has no records (dev.jsonl is empty)"]
    splits = read_split_files(tmp_path)
    assert (len(splits["train"]), len(splits["dev"]), len(splits["test"])) == (0, 0, 142)
    assert len(stats.warnings) == 2
    assert_counts_add_up(stats.to_dict(), splits)


def test_only_test_split_without_shared_data(tmp_path):
    src = tmp_path / "rt"
    src.mkdir()
    shutil.copy(sample_data_dir() / "source_info.jsonl", src)
    lines = (sample_data_dir() / "response.jsonl").read_text("utf-8").splitlines()
    (src / "response.jsonl").write_text("\n".join(x for x in lines if '"split": "test"' in x) + "\n", "utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stats = prepare(src, tmp_path / "out")
    assert {str(w.message) for w in caught} == {TRAIN_EMPTY,
                                                "split 'dev' has no records (dev.jsonl is empty)"}
    assert stats.splits["test"].responses == 22 and (tmp_path / "out" / "train.jsonl").read_text() == ""


def test_dev_per_task_larger_than_train_sources(tmp_path):
    with pytest.warns(UserWarning) as caught:
        stats = prepare(sample_data_dir(), tmp_path, dev_per_task=100)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 4 and messages[-1] == TRAIN_EMPTY
    assert messages[0].startswith("QA: only 7 train source(s), all moved to dev (--dev-per-task 100)")
    assert stats.splits["train"].responses == 0 and stats.splits["dev"].sources == 21
    with pytest.raises(InputError, match="dev_per_task"):
        prepare(sample_data_dir(), tmp_path, dev_per_task=-1)


def test_dev_zero_gives_empty_dev(tmp_path):
    with pytest.warns(UserWarning, match="split 'dev' has no records"):
        stats = prepare(sample_data_dir(), tmp_path, dev_per_task=0)
    assert stats.splits["dev"].responses == 0 and stats.splits["train"].responses == 51


def test_accounting_with_repairs_duplicates_and_filtered_labels(tmp_path):
    src = tmp_path / "rt"
    src.mkdir()
    source = {"source_id": "s1", "task_type": "Summary", "source": "CNN/DM", "prompt": "p",
              "source_info": "The museum opened in 1990. It has 12 rooms."}
    text = "The museum opened in 1991 and has 14 rooms."
    lab = {"meta": "", "label_type": "Evident Conflict", "implicit_true": False, "due_to_null": False}
    labels = [{"start": 21, "end": 25, "text": "1991"} | lab,  # exact
              {"start": 21, "end": 25, "text": "1991"} | lab,  # duplicate
              {"start": 36, "end": 38, "text": "14"} | lab,  # shifted by +2: repaired
              {"start": 0, "end": 3, "text": "1990"} | lab]  # not found: unrepairable
    rows = [{"id": "a", "source_id": "s1", "model": "m", "labels": labels, "split": "test", "quality": "good",
             "response": text},
            {"id": "b", "source_id": "s1", "model": "m", "labels": labels[:1], "split": "test",
             "quality": "truncated", "response": text}]
    (src / "source_info.jsonl").write_text(json.dumps(source) + "\n", "utf-8")
    (src / "response.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    with pytest.warns(UserWarning):
        stats = prepare(src, tmp_path / "out")
    lab_stats = stats.to_dict()["labels"]
    assert {k: lab_stats[k] for k in ("input", "exact", "repaired", "unrepairable", "duplicates_removed", "spans",
                                      "spans_written", "spans_in_filtered_responses")} == \
        {"input": 5, "exact": 3, "repaired": 1, "unrepairable": 1, "duplicates_removed": 1, "spans": 3,
         "spans_written": 2, "spans_in_filtered_responses": 1}
    assert lab_stats["unrepairable_labels"][0]["id"] == "a"
    assert_counts_add_up(stats.to_dict(), read_split_files(tmp_path / "out"))
    [record] = read_records(tmp_path / "out" / "test.jsonl")
    assert [(s.start, s.text) for s in record.spans] == [(21, "1991"), (34, "14")]


# --- CLI -----------------------------------------------------------------------------------------------------

runner = CliRunner()


def test_cli_prepare_sample(tmp_path):
    result = runner.invoke(app, ["prepare", "--sample", "--out", str(tmp_path), "--dev-per-task", "1",
                                 "--seed", "3"])
    assert result.exit_code == 0, result.output
    assert "Prepared splits" in result.output and "repaired (found unambiguously nearby)" in result.output
    stats = json.loads((tmp_path / "stats.json").read_text("utf-8"))
    assert stats["seed"] == 3 and stats["splits"]["dev"]["sources"] == 3


def test_cli_keep_quality_forms(tmp_path):
    d = str(sample_data_dir())
    result = runner.invoke(app, ["prepare", "--ragtruth-dir", d, "--out", str(tmp_path / "a"),
                                 "--keep-quality", "good,truncated", "--keep-quality", "incorrect_refusal"])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "a" / "stats.json").read_text())["responses"]["filtered"] == 0
    result = runner.invoke(app, ["prepare", "--ragtruth-dir", d, "--out", str(tmp_path / "b"),
                                 "--keep-quality", "all"])
    assert result.exit_code == 0 and json.loads((tmp_path / "b" / "stats.json").read_text())["keep_quality"] == "all"


def test_cli_errors(tmp_path):
    result = runner.invoke(app, ["prepare", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "exactly one of --ragtruth-dir DIR or --sample" in result.output
    result = runner.invoke(app, ["prepare", "--sample", "--ragtruth-dir", str(tmp_path), "--out", str(tmp_path)])
    assert result.exit_code == 2
    bad = tmp_path / "bad"
    bad.mkdir()
    shutil.copy(sample_data_dir() / "source_info.jsonl", bad)
    (bad / "response.jsonl").write_text('{"id": "1"}\n', "utf-8")
    result = runner.invoke(app, ["prepare", "--ragtruth-dir", str(bad), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "response.jsonl:1" in result.output and "field 'source_id'" in result.output
    assert "missing required field" in result.output and "Traceback" not in result.output


def test_cli_bad_outputs_and_inputs_are_one_line_errors(tmp_path):
    a_file = tmp_path / "taken"
    a_file.write_text("not a folder")
    result = runner.invoke(app, ["prepare", "--sample", "--out", str(a_file)], terminal_width=300)
    assert result.exit_code == 2
    assert "taken, field '--out': the output path exists and is not a directory" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    shutil.copy(sample_data_dir() / "source_info.jsonl", empty)
    (empty / "response.jsonl").write_text("\n", "utf-8")
    result = runner.invoke(app, ["prepare", "--ragtruth-dir", str(empty), "--out", str(tmp_path / "o")],
                           terminal_width=300)
    assert result.exit_code == 2 and "response.jsonl: no responses: the file is empty" in result.output
    latin1 = tmp_path / "latin1"
    latin1.mkdir()
    shutil.copy(sample_data_dir() / "source_info.jsonl", latin1)
    lines = (sample_data_dir() / "response.jsonl").read_bytes().splitlines(keepends=True)
    (latin1 / "response.jsonl").write_bytes(lines[0] + lines[1].replace(b"minutes", b"minut\xe9s", 1) + lines[2])
    result = runner.invoke(app, ["prepare", "--ragtruth-dir", str(latin1), "--out", str(tmp_path / "o2")],
                           terminal_width=300)
    assert result.exit_code == 2 and "response.jsonl:2: not valid UTF-8" in result.output
    assert "Traceback" not in result.output


def test_cli_split_by_source(tmp_path):
    out = tmp_path / "resplit"
    result = runner.invoke(app, ["prepare", "--sample", "--out", str(out), "--split-by-source",
                                 "train=0.6,dev=0.2,test=0.2", "--seed", "3"])
    assert result.exit_code == 0, result.output
    stats = json.loads((out / "stats.json").read_text())
    assert stats["split_by_source"] == {"train": 0.6, "dev": 0.2, "test": 0.2}
    splits = read_split_files(out)
    sources = {name: {r.source_id for r in records} for name, records in splits.items()}
    assert not (sources["train"] & sources["dev"] or sources["train"] & sources["test"] or
                sources["dev"] & sources["test"])
    assert {name: sorted(ids) for name, ids in sources.items()} == stats["split_source_ids"]
    assert all(r.split == name for name, records in splits.items() for r in records)
    both = runner.invoke(app, ["prepare", "--sample", "--out", str(tmp_path / "x"), "--split-by-source",
                               "train=0.8,test=0.2", "--dev-per-task", "2"])
    assert both.exit_code == 2 and "exclude each other" in both.output
