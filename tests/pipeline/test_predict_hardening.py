"""Predict: one writer per output (a second predict on the same --out is refused at once, not interleaved),
the torn-line repair replaces the file atomically, and a record of the wrong type stops before any detection."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.files import exclusive_output, lock_path
from ragtruth_spans.core.predictions import read_prediction_file
from ragtruth_spans.detectors.base import Detection, Detector
from ragtruth_spans.pipeline.predict import predict_file


class Slow(Detector):
    """Holds its first call until ``gate`` opens, so a second writer can arrive while the first one writes."""

    kind = "slow"

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.gate, self.started, self.seen = gate, threading.Event(), []

    def detect_batch(self, items):
        self.started.set()
        if self.gate is not None:
            assert self.gate.wait(30)
        self.seen.extend(i.id for i in items)
        return [Detection(spans=[], score=0.0) for _ in items]


def test_a_second_writer_on_the_same_output_is_refused(sample_test_file, tmp_path: Path) -> None:
    data, records = sample_test_file
    out = tmp_path / "pred.jsonl"
    gate = threading.Event()
    first = Slow(gate)
    errors: list[BaseException] = []

    def run_first() -> None:
        try:
            predict_file("unused", data, out, chunk_size=2, detector=first, progress=False)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=run_first)
    thread.start()
    assert first.started.wait(30)
    second = Slow()
    with pytest.raises(InputError, match="pred.jsonl: another process is writing this file"):
        predict_file("unused", data, out, detector=second, progress=False)
    gate.set()
    thread.join(30)
    assert not errors and second.seen == []
    predictions = read_prediction_file(out)  # every id exactly once (a duplicate would raise)
    assert set(predictions.spans) == {r.id for r in records}
    assert not lock_path(out).exists()


def test_predict_refuses_while_another_process_holds_the_lock(sample_test_file, tmp_path: Path) -> None:
    data, _ = sample_test_file
    out = tmp_path / "pred.jsonl"
    with exclusive_output(out), pytest.raises(InputError, match="another process is writing"):
        predict_file("unused", data, out, detector=Slow(), progress=False)
    assert not out.exists()


def test_the_repair_of_a_torn_last_line_keeps_the_file_whole(sample_test_file, tmp_path: Path) -> None:
    data, records = sample_test_file
    out = tmp_path / "pred.jsonl"
    predict_file("unused", data, out, limit=2, detector=Slow(), progress=False)
    inode = out.stat().st_ino
    with out.open("a", encoding="utf-8") as fh:
        fh.write('{"id": "' + records[2].id + '", "spa')
    summary = predict_file("unused", data, out, detector=Slow(), progress=False)
    assert summary.repaired_last_line and len(read_prediction_file(out).spans) == len(records)
    assert out.stat().st_ino != inode  # replaced by rename, not rewritten in place
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize(("change", "field"), [({"question": 5}, "question"), ({"context": {"a": 1}}, "context"),
                                               ({"response": "x\ud800"}, "response")])
def test_a_record_of_the_wrong_type_stops_before_any_detection(tmp_path: Path, change: dict, field: str) -> None:
    record = {"id": "r1", "source_id": "s1", "task_type": "QA", "model": "m", "split": "test", "quality": "good",
              "response": "It opened in 1998.", "context": "Opened in 1999.", "question": "When?", "spans": []}
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps(record | change) + "\n", encoding="utf-8")
    detector = Slow()
    with pytest.raises(InputError, match=f"data.jsonl:1, field '{field}'"):
        predict_file("unused", data, tmp_path / "pred.jsonl", detector=detector, progress=False)
    assert detector.seen == []


def test_an_unwritable_output_is_refused_before_loading_anything(sample_test_file, tmp_path: Path) -> None:
    data, _ = sample_test_file
    with pytest.raises(InputError, match="is a folder, not a file"):
        predict_file("unused", data, tmp_path, detector=Slow(), progress=False)


@pytest.mark.parametrize("torn", ['{"predicted": 3, "seco', "[1, 2]", '{"predicted": "x", "seconds": 1}', "\xff"])
def test_a_damaged_timing_sidecar_is_a_cache_miss_not_a_crash(tmp_path: Path, torn: str) -> None:
    from types import SimpleNamespace

    from ragtruth_spans.pipeline.benchmark import BenchmarkPaths, _throughput

    paths = BenchmarkPaths(tmp_path)
    paths.timing("numbers").parent.mkdir(parents=True)
    paths.timing("numbers").write_text(torn, encoding="latin-1")
    summary = SimpleNamespace(predicted=4, predict_seconds=2.0, load_seconds=0.5)
    assert _throughput(paths, "numbers", summary)["responses_per_second"] == 2.0
    assert json.loads(paths.timing("numbers").read_text()) == {"predicted": 4, "seconds": 2.0, "load_seconds": 0.5}


class Failing(Detector):
    """Raises on a batch that holds one of ``bad`` ids (every batch when ``bad`` is None); counts its calls."""

    kind = "failing"

    def __init__(self, bad: set[str] | None) -> None:
        self.bad, self.calls = bad, 0

    def detect_batch(self, items):
        self.calls += 1
        if self.bad is None or self.bad & {i.id for i in items}:
            raise RuntimeError("boom")
        return [Detection(spans=[], score=0.5) for _ in items]


def test_a_record_that_makes_the_detector_raise_fails_only_itself(sample_test_file, tmp_path: Path) -> None:
    data, records = sample_test_file
    bad = records[2].id
    detector = Failing({bad})
    summary = predict_file(None, data, tmp_path / "pred.jsonl", detector=detector, chunk_size=6, progress=False)
    lines = {row["id"]: row for row in map(json.loads, (tmp_path / "pred.jsonl").read_text().splitlines())}
    assert len(lines) == 6 and summary.errors == 1 and summary.counters == {"detector_exception": 1}
    assert lines[bad] == {"id": bad, "spans": [], "score": None, "detector_exception": True,
                          "error": "the detector failed on this record: RuntimeError: boom"}
    assert all(row["score"] == 0.5 for rid, row in lines.items() if rid != bad)
    assert detector.calls <= 1 + 2 * 3  # halving: a few calls around the bad record, not one per record


def test_a_detector_that_fails_on_every_record_stops_the_run(sample_test_file, tmp_path: Path) -> None:
    data, _ = sample_test_file
    with pytest.raises(RuntimeError, match="boom"):
        predict_file(None, data, tmp_path / "pred.jsonl", detector=Failing(None), chunk_size=6, progress=False)
    assert (tmp_path / "pred.jsonl").read_text() == ""  # no error line was written for a broken detector
