"""predict over a prepared file: resume, failures and diagnostics, counts, bad input (with scripted detectors)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import write_records
from ragtruth_spans.core.predictions import read_prediction_file
from ragtruth_spans.detectors.base import Detector
from ragtruth_spans.detectors.generative.prompts import format_target
from ragtruth_spans.detectors.generative.results import detection_from_text
from ragtruth_spans.evaluation import evaluate
from ragtruth_spans.pipeline.predict import predict_file, read_done_ids
from ragtruth_spans.reporting.console import predict_summary


class ScriptedDetector(Detector):
    """A stand-in for a generative model: 'generates' a scripted text per response (the gold target unless
    overridden), parsed and aligned as the generative family does."""

    kind = "scripted"

    def __init__(self, outputs: dict[str, str] | None = None) -> None:
        self.outputs = outputs or {}
        self.seen: list[str] = []
        self.calls: list[int] = []

    def detect_batch(self, items):
        self.calls.append(len(items))
        results = []
        for record in items:
            self.seen.append(record.id)
            raw = self.outputs.get(record.id, format_target(record.spans))
            results.append(detection_from_text(record.response, raw))
        return results


def test_gold_targets_round_trip_to_f1_one(sample_test_file, tmp_path: Path) -> None:
    data, records = sample_test_file
    assert any(r.spans for r in records) and any(not r.spans for r in records)
    out = tmp_path / "pred.jsonl"
    detector = ScriptedDetector()
    summary = predict_file("unused", data, out, chunk_size=4, detector=detector, progress=False)
    assert (summary.responses, summary.predicted, summary.errors, summary.counters["unaligned"]) == (6, 6, 0, 0)
    assert detector.calls == [4, 2]  # chunks of chunk_size responses, each written and flushed before the next
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert {r["id"] for r in rows} == {r.id for r in records}
    assert all(r["parse_ok"] and r["raw"] and r["unaligned"] == [] for r in rows)
    report = evaluate(records, read_prediction_file(out).spans)
    assert report.overall["span"]["f1"] == pytest.approx(1.0)


def test_resume_skips_done_ids_and_repairs_a_cut_last_line(sample_test_file, tmp_path: Path) -> None:
    data, records = sample_test_file
    out = tmp_path / "pred.jsonl"
    predict_file("unused", data, out, limit=3, detector=ScriptedDetector(), progress=False)
    with out.open("a", encoding="utf-8") as fh:  # a crash in the middle of writing line 4
        fh.write('{"id": "' + records[3].id + '", "spa')
    detector = ScriptedDetector()
    summary = predict_file("unused", data, out, detector=detector, progress=False)
    assert summary.skipped_done == 3 and summary.predicted == 3 and summary.repaired_last_line
    assert sorted(detector.seen) == sorted(r.id for r in records[3:])
    assert len(read_prediction_file(out).spans) == 6  # valid file, each id once
    again = predict_file("unused", data, out, detector=ScriptedDetector(), progress=False)
    assert (again.skipped_done, again.predicted) == (6, 0)


def test_parse_failures_and_unaligned_spans_are_counted_and_kept(sample_test_file, tmp_path: Path) -> None:
    data, records = sample_test_file
    garbled, invented = records[0].id, records[1].id
    detector = ScriptedDetector({garbled: "I think the response is mostly fine",
                                 invented: '[{"text": "zebra crossing quartet", "type": "Evident Conflict"}]'})
    out = tmp_path / "pred.jsonl"
    summary = predict_file("unused", data, out, detector=detector, progress=False)
    assert summary.errors == 1 and summary.counters["unaligned"] == 1
    rows = {r["id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert rows[garbled]["parse_ok"] is False and rows[garbled]["spans"] == [] and rows[garbled]["error"]
    assert rows[garbled]["raw"] == "I think the response is mostly fine" and rows[garbled]["parse_error"]
    assert rows[invented]["parse_ok"] is True and rows[invented]["unaligned"] == ["zebra crossing quartet"]
    rendered = predict_summary(summary.to_dict())
    assert "detector failures: 1" in rendered and "unaligned: 1" in rendered
    resumed = predict_summary(predict_file("unused", data, out, detector=detector, progress=False).to_dict())
    assert f"(0 predicted, {len(records)} skipped" in resumed and "nothing left to detect" in resumed
    assert "detector failures" not in resumed and "responses/s" not in resumed


def test_bad_inputs_raise_clear_errors(sample_test_file, tmp_path: Path) -> None:
    _, records = sample_test_file
    dup = tmp_path / "dup.jsonl"
    write_records(dup, [records[0], records[1], records[0]])
    with pytest.raises(InputError, match=r"dup.jsonl:3.*duplicate id"):
        predict_file("unused", dup, tmp_path / "p.jsonl", detector=ScriptedDetector(), progress=False)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "a", "spans": []}\nnot json\n{"id": "b", "spans": []}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"broken.jsonl:2"):
        read_done_ids(broken)




# --- a predictions file says what wrote it (OUT.meta.json) and is resumed only by the same detector and data ----

def test_resume_needs_the_same_detector_and_data(sample_test_file, tmp_path: Path) -> None:
    data, records = sample_test_file
    out = tmp_path / "pred.jsonl"
    predict_file("numbers", data, out, limit=3, progress=False)
    meta = json.loads((tmp_path / "pred.jsonl.meta.json").read_text(encoding="utf-8"))
    assert meta["detector"] == {"kind": "rules", "name": "numbers"} and len(meta["data_sha256"]) == 64
    with pytest.raises(InputError, match=r"pred.jsonl: .*differs in: name"):
        predict_file("flag-all", data, out, progress=False)
    changed = tmp_path / "changed.jsonl"
    write_records(changed, [records[0].__class__(**{**records[0].__dict__, "response": records[0].response + " x"}),
                            *records[1:]])
    with pytest.raises(InputError, match=r"differs in: data"):
        predict_file("numbers", changed, out, progress=False)
    assert predict_file("numbers", data, out, progress=False).skipped_done == 3  # same detector, same data


def test_a_wrong_model_an_unlabelled_file_or_foreign_ids_are_refused(sample_test_file, tmp_path: Path) -> None:
    data, records = sample_test_file
    out = tmp_path / "pred.jsonl"
    predict_file("numbers", data, out, progress=False)
    with pytest.raises(InputError, match="neither a run directory nor a detector name"):
        predict_file(str(tmp_path / "nonexistent"), data, out, progress=False)  # even with nothing left to do
    (tmp_path / "pred.jsonl.meta.json").unlink()
    with pytest.raises(InputError, match=r"no pred.jsonl.meta.json saying what wrote it"):
        predict_file("numbers", data, out, progress=False)
    other = tmp_path / "other.jsonl"
    write_records(other, records[2:])
    fresh = tmp_path / "fresh.jsonl"
    predict_file("numbers", data, fresh, progress=False)
    with pytest.raises(InputError, match=r"2 id\(s\) in the predictions file are not in .*other.jsonl"):
        predict_file("numbers", other, fresh, progress=False)
