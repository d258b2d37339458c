"""Detector, predict and its predictions file: resume, diagnostics, counts; end to end on the overfit tiny model."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.detector import DetectionResult, ModelDir, finish, prompt_budget
from ragtruth_spans.evaluation import evaluate, read_predictions
from ragtruth_spans.predict import done_ids, predict_file
from ragtruth_spans.prompts import format_target
from ragtruth_spans.ragtruth import load_ragtruth, sample_data_dir
from ragtruth_spans.schema import InputError, Record, Span, write_records
from ragtruth_spans.vllm_backend import BackendUnavailable, import_vllm

runner = CliRunner()


class ScriptedDetector:
    """A stand-in for a model: 'generates' a scripted text per response (the gold target unless overridden)."""

    def __init__(self, outputs: dict[str, str] | None = None) -> None:
        self.outputs = outputs or {}
        self.seen: list[str] = []

    def detect_batch(self, items, batch_size=8, on_batch=None) -> list[DetectionResult]:
        results = []
        for record in items:
            self.seen.append(record.id)
            raw = self.outputs.get(record.id, format_target(record.spans))
            results.append(finish(record.response, raw))
        return results


@pytest.fixture()
def sample_test_file(tmp_path: Path) -> tuple[Path, list[Record]]:
    records = load_ragtruth(sample_data_dir(), split="test")[:6]
    path = tmp_path / "test.jsonl"
    write_records(path, records)
    return path, records


def test_gold_targets_round_trip_to_f1_one(sample_test_file, tmp_path: Path) -> None:
    data, records = sample_test_file
    assert any(r.spans for r in records) and any(not r.spans for r in records)
    out = tmp_path / "pred.jsonl"
    summary = predict_file("unused", data, out, batch_size=4, detector=ScriptedDetector(), progress=False)
    assert (summary.responses, summary.predicted, summary.parse_failures, summary.unaligned_spans) == (6, 6, 0, 0)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert {r["id"] for r in rows} == {r.id for r in records}
    assert all(r["parse_ok"] and r["raw"] and r["unaligned"] == [] for r in rows)
    report = evaluate(records, read_predictions(out))
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
    assert len(read_predictions(out)) == 6  # valid file, each id once
    again = predict_file("unused", data, out, detector=ScriptedDetector(), progress=False)
    assert (again.skipped_done, again.predicted) == (6, 0)


def test_parse_failures_and_unaligned_spans_are_counted_and_kept(sample_test_file, tmp_path: Path) -> None:
    data, records = sample_test_file
    garbled, invented = records[0].id, records[1].id
    detector = ScriptedDetector({garbled: "I think the response is mostly fine",
                                 invented: '[{"text": "zebra crossing quartet", "type": "Evident Conflict"}]'})
    out = tmp_path / "pred.jsonl"
    summary = predict_file("unused", data, out, detector=detector, progress=False)
    assert summary.parse_failures == 1 and summary.unaligned_spans == 1
    rows = {r["id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert rows[garbled]["parse_ok"] is False and rows[garbled]["spans"] == []
    assert rows[garbled]["raw"] == "I think the response is mostly fine" and rows[garbled]["parse_error"]
    assert rows[invented]["parse_ok"] is True and rows[invented]["unaligned"] == ["zebra crossing quartet"]
    assert "parse failures: 1" in summary.render() and "unaligned spans: 1" in summary.render()


def test_bad_inputs_raise_clear_errors(sample_test_file, tmp_path: Path) -> None:
    data, records = sample_test_file
    dup = tmp_path / "dup.jsonl"
    write_records(dup, [records[0], records[1], records[0]])
    with pytest.raises(InputError, match=r"dup.jsonl:3.*duplicate id"):
        predict_file("unused", dup, tmp_path / "p.jsonl", detector=ScriptedDetector(), progress=False)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "a", "spans": []}\nnot json\n{"id": "b", "spans": []}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"broken.jsonl:2"):
        done_ids(broken)
    with pytest.raises(InputError, match="no adapter_config.json"):
        ModelDir.read(tmp_path)
    (tmp_path / "adapter_config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(InputError, match="recipe.yaml"):
        ModelDir.read(tmp_path)


def test_prompt_budget_leaves_room_for_the_response() -> None:
    assert prompt_budget(4096, 512) == 3584
    assert prompt_budget(512, 512) == 384  # the generation reserve never takes more than a quarter
    assert prompt_budget(768, 128) == 640
    assert prompt_budget(None, 512) is None


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_vllm_backend_missing_gives_install_hint(sample_test_file, tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailable, match=r"pip install 'ragtruth-spans\[vllm\]'"):
        import_vllm()
    data, _ = sample_test_file
    result = runner.invoke(app, ["predict", "--model", str(tmp_path), "--data", str(data), "--out",
                                 str(tmp_path / "p.jsonl"), "--backend", "vllm"])
    assert result.exit_code == 2
    assert "ragtruth-spans[vllm]" in result.output


# --- end to end on the tiny model overfit by the training tests ------------------------------------------

def test_predict_on_overfit_model_reproduces_gold_spans(overfit_run, tmp_path: Path) -> None:
    records = overfit_run.records
    data = tmp_path / "overfit.jsonl"
    write_records(data, records)
    out = tmp_path / "pred.jsonl"
    result = runner.invoke(app, ["predict", "--model", str(overfit_run.output_dir), "--data", str(data),
                                 "--out", str(out), "--batch-size", "4", "--max-new-tokens", "128"])
    assert result.exit_code == 0, result.output
    assert f"responses: {len(records)}" in result.output and "parse failures: 0" in result.output
    predictions = read_predictions(out, response_lengths={r.id: len(r.response) for r in records})
    for record in records:
        assert [(s.start, s.end, s.type) for s in predictions[record.id]] == \
               [(s.start, s.end, s.type) for s in record.spans], record.id
    report = evaluate(records, predictions)
    assert report.overall["span"]["f1"] == pytest.approx(1.0)

    rerun = runner.invoke(app, ["predict", "--model", str(overfit_run.output_dir), "--data", str(data),
                                "--out", str(out)])
    assert rerun.exit_code == 0 and f"{len(records)} skipped" in rerun.output


def test_detect_and_detect_batch_agree_with_gold(overfit_run) -> None:
    from ragtruth_spans.detector import Detector

    detector = Detector.from_pretrained(overfit_run.output_dir, device="cpu", max_new_tokens=128)
    record = next(r for r in overfit_run.records if r.spans)
    spans = detector.detect(context=record.context, response=record.response, task=record.task_type,
                            question=record.question)
    assert [(s.start, s.end, s.type) for s in spans] == [(s.start, s.end, s.type) for s in record.spans]
    assert all(s.text == record.response[s.start:s.end] for s in spans)
    batch = detector.detect_batch(overfit_run.records, batch_size=3)
    assert all(r.parse_ok for r in batch)
    assert [[Span(s.start, s.end) for s in r.spans] for r in batch] == \
           [[Span(s.start, s.end) for s in rec.spans] for rec in overfit_run.records]


def test_a_response_too_long_for_the_window_fails_only_its_item(overfit_run) -> None:
    from ragtruth_spans.detector import Detector

    detector = Detector.from_pretrained(overfit_run.output_dir, device="cpu", max_new_tokens=128)
    record = next(r for r in overfit_run.records if r.spans)
    long_item = {"context": record.context, "response": record.response + " padding" * 400,
                 "task": record.task_type, "question": record.question}
    results = detector.detect_batch([long_item, record], batch_size=2)
    assert results[0].too_long and not results[0].parse_ok and results[0].spans == []
    assert "not generated" in results[0].parse_error and results[0].diagnostics()["too_long"] is True
    assert results[1].parse_ok and [(s.start, s.end) for s in results[1].spans] == \
           [(s.start, s.end) for s in record.spans]
