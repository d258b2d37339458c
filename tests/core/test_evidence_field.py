"""The optional evidence of a span in prediction files: written by ``predict --evidence``, read back by the
readers, refused when malformed (one line naming file:line and field), and ignored by the evaluator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.evidence import Passage, SpanEvidence, evidence_from_dict
from ragtruth_spans.core.jsonl import write_records
from ragtruth_spans.core.predictions import read_prediction_file
from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.evaluation.files import evaluate_files
from ragtruth_spans.pipeline.predict import predict_file

EVIDENCE = SpanEvidence("contradicted", (Passage(4, 20, 0.5, ((10, 14),)), Passage(30, 41, 0.25)),
                        "the context has 1999, not 2003")


def test_span_round_trips_its_evidence_and_compares_without_it() -> None:
    span = Span(3, 7, type="Evident Conflict", score=0.9, evidence=EVIDENCE)
    row = span.to_dict()
    assert row == {"start": 3, "end": 7, "type": "Evident Conflict", "score": 0.9, "verdict": "contradicted",
                   "reason": "the context has 1999, not 2003",
                   "evidence": [{"start": 4, "end": 20, "score": 0.5, "conflicts": [[10, 14]]},
                                {"start": 30, "end": 41, "score": 0.25}]}
    assert Span.from_dict(json.loads(json.dumps(row))) == span and Span.from_dict(row).evidence == EVIDENCE
    assert span == Span(3, 7, type="Evident Conflict", score=0.9) and hash(span) == hash(Span(3, 7, "Evident Conflict",
                                                                                                score=0.9))
    assert evidence_from_dict({"start": 0, "end": 1}) is None


@pytest.mark.parametrize(("extra", "message"), [
    ({"verdict": "wrong"}, "verdict must be one of contradicted, unsupported, uncertain"),
    ({"verdict": "unsupported", "evidence": {"start": 0}}, "evidence must be a list"),
    ({"verdict": "unsupported", "evidence": [{"start": 5, "end": 2}]}, "evidence[0] [5, 2) is not a valid"),
    ({"verdict": "unsupported", "evidence": [{"start": 0, "end": 2, "score": "x"}]}, "evidence[0].score"),
    ({"verdict": "contradicted", "evidence": [{"start": 0, "end": 2, "conflicts": [[1]]}]}, "conflicts[0]"),
])
def test_malformed_evidence_is_one_clear_error(tmp_path: Path, extra: dict, message: str) -> None:
    path = tmp_path / "pred.jsonl"
    path.write_text(json.dumps({"id": "a", "spans": []}) + "\n" +
                    json.dumps({"id": "b", "spans": [{"start": 0, "end": 3} | extra]}) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_prediction_file(path)
    assert f"{path}:2" in str(caught.value) and "spans[0]" in str(caught.value) and message in str(caught.value)


def _records() -> list[Record]:
    context = "Ünïcode café 🍣 opened in 1999.\r\nIt has 120 rooms."
    return [Record(id=str(i), source_id="s", task_type="Summary", model="m", split="test", quality="good",
                   response=response, context=context,
                   spans=[Span(response.index("2003"), response.index("2003") + 4, "Evident Conflict")]
                   if "2003" in response else [])
            for i, response in enumerate(["The café 🍣 opened in 2003.", "It has 120 rooms.",
                                               "Opened 2003.\r\nA rooftop bar seats 40 guests."])]


def test_predict_with_evidence_is_read_back_and_evaluated_as_without(tmp_path: Path) -> None:
    from ragtruth_spans.evidence import EvidenceFinder

    records = _records()
    data = tmp_path / "test.jsonl"
    write_records(data, records)
    plain = predict_file("numbers", data, tmp_path / "plain.jsonl", progress=False)
    explained = predict_file("numbers", data, tmp_path / "ev.jsonl", progress=False, evidence=EvidenceFinder())
    assert plain.spans == explained.spans == 3
    lengths = {r.id: len(r.response) for r in records}
    read = read_prediction_file(tmp_path / "ev.jsonl", response_lengths=lengths)
    spans = [s for r in records for s in read.spans[r.id]]
    assert all(s.evidence is not None for s in spans)
    assert {s.evidence.verdict for s in spans} == {"contradicted", "unsupported"}
    for record in records:
        for span in read.spans[record.id]:
            assert all(p.end <= len(record.context) for p in span.evidence.passages)
    assert read.diagnostics["counters"] == read_prediction_file(tmp_path / "plain.jsonl").diagnostics["counters"]
    with_evidence, without = (evaluate_files(data, tmp_path / name).to_dict() for name in ("ev.jsonl", "plain.jsonl"))
    assert with_evidence["overall"] == without["overall"] and with_evidence["counts"] == without["counts"]
    meta = json.loads((tmp_path / "ev.jsonl.meta.json").read_text(encoding="utf-8"))
    assert meta["evidence"]["mode"] == "lexical" and "evidence" not in json.loads(
        (tmp_path / "plain.jsonl.meta.json").read_text(encoding="utf-8"))
    with pytest.raises(InputError, match="evidence"):  # resuming without evidence, or another mode, is refused
        predict_file("numbers", data, tmp_path / "ev.jsonl", progress=False)
