"""scripts/bench_train_scale.py resamples the training split to k × the pool (copies keep their source), trains
each size in its own process and tabulates minutes, memory and growth per stage; a finished size is reused."""

from __future__ import annotations

import json

import pytest
from conftest import load_script, synthetic_records

from ragtruth_spans.core.jsonl import write_records

bench_scale = load_script("bench_train_scale")


def test_resampled_copies_keep_their_source_and_get_new_ids(tmp_path):
    write_records(tmp_path / "train.jsonl", synthetic_records(4, 0, "train"))
    (tmp_path / "dev.jsonl").write_text("")
    distinct = bench_scale.write_data(tmp_path, tmp_path / "x", 20)
    rows = [json.loads(line) for line in (tmp_path / "x" / "train.jsonl").read_text().splitlines()]
    assert distinct == 8 and len(rows) == 20 and len({r["id"] for r in rows}) == 20
    first = {r["id"]: r for r in rows[:8]}
    for row in rows[8:]:
        original = first[row["id"].split("#rep-")[0]]
        assert row["source_id"] == original["source_id"] and row["response"] == original["response"]


def test_growth_reads_one_for_linear_stages():
    rows = [{"factor": 1, "size": 10, "training_responses": 12, "words": 100, "wall_minutes": 1, "peak_rss_mb": 5,
             "seconds": {"columns": 10.0, "combiner": 2.0}},
            {"factor": 3, "size": 30, "training_responses": 36, "words": 300, "wall_minutes": 3, "peak_rss_mb": 6,
             "seconds": {"columns": 30.0, "combiner": 18.0}}]
    table = bench_scale.growth(rows)
    assert table[-1].endswith("| 1.00 | 2.00 |")


def test_a_folder_without_splits_is_exit_2(tmp_path, capsys):
    assert bench_scale.main(["--data", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.startswith("error: ")


@pytest.mark.slow
def test_two_sizes_train_and_a_rerun_reuses_them(tmp_path, capsys):
    data = tmp_path / "data"
    write_records(data / "train.jsonl", synthetic_records(16, 0, "train"))
    write_records(data / "dev.jsonl", synthetic_records(6, 1, "dev"))
    tiny = ["features.encoder=null", "features.token_support=false", "data.synth=null", "combiner.min_data_in_leaf=5",
            "combiner.oof_folds=2", "combiner.max_rounds=30", "response=null"]
    args = ["--data", str(data), "--factors", "0.02", "0.04", "--out", str(tmp_path / "o"),
            *[a for o in tiny for a in ("--set", o)]]
    assert bench_scale.main(args) == 0
    result = json.loads((tmp_path / "o" / "scale.json").read_text())
    assert [r["size"] for r in result["rows"]] == [30, 59]
    assert all(r["peak_rss_mb"] > 0 and r["seconds"]["columns"] >= 0 for r in result["rows"])
    assert "growth 0.02×→0.04×" in capsys.readouterr().out
    log = tmp_path / "o" / "train-x0.02.log"
    stamp = log.stat().st_mtime_ns
    assert bench_scale.main(args) == 0 and log.stat().st_mtime_ns == stamp  # reused, not retrained
