"""One reading of spans: gold spans on an equal range merge (types kept, no TypeError comparing None with
a string) and an empty span (start == end) is refused by every reader with file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import read_records
from ragtruth_spans.core.types import Span, canonical_spans
from ragtruth_spans.data.own_jsonl import read_own_jsonl
from ragtruth_spans.selection.select import as_candidate

RESPONSE = "It opened in 1998 in Paris."


def _record(spans: list[dict], rid: str = "r1", model: str = "a", source: str = "s1") -> dict:
    return {"id": rid, "source_id": source, "task_type": "Summary", "model": model, "split": "test",
            "quality": "good", "response": RESPONSE, "context": "It opened in 1999 in Lyon.", "question": None,
            "spans": spans}


def _lines(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


TYPED_AND_UNTYPED = [{"start": 13, "end": 17, "type": "Evident Conflict"}, {"start": 13, "end": 17}]


def test_equal_ranges_typed_and_untyped_merge_keeping_the_type():
    spans = canonical_spans([Span(13, 17), Span(13, 17, "Evident Conflict"), Span(0, 2),
                             Span(13, 17, "Subtle Conflict"), Span(0, 2)])
    assert [(s.start, s.end, s.type) for s in spans] == [(0, 2, None), (13, 17, "Evident Conflict"),
                                                         (13, 17, "Subtle Conflict")]
    assert sorted([Span(1, 2, "Evident Conflict"), Span(1, 2), Span(0, 9)])[0] == Span(0, 9)  # no TypeError


def test_every_reader_takes_a_typed_and_an_untyped_span_on_one_range(tmp_path):
    gold = _lines(tmp_path / "gold.jsonl", [_record(TYPED_AND_UNTYPED),
                                            _record([], rid="r2", model="b")])
    [record, _] = read_records(gold)
    assert [(s.start, s.end, s.type) for s in record.spans] == [(13, 17, "Evident Conflict")]
    own = _lines(tmp_path / "own.jsonl", [{"context": "c", "response": RESPONSE, "spans": TYPED_AND_UNTYPED}])
    records, report = read_own_jsonl(own)
    assert [s.type for s in records[0].spans] == ["Evident Conflict"] and report.repaired["duplicate span merged"]
    pred = _lines(tmp_path / "pred.jsonl", [{"id": "r1", "spans": [{"start": 13, "end": 17}]},
                                            {"id": "r2", "spans": []}])
    runner = CliRunner()
    result = runner.invoke(app, ["evaluate", "--gold", str(gold), "--pred", str(pred), "--bootstrap", "0"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["select", "--gold", str(gold), "--pred", str(pred), "--models", "a,b",
                                 "--bootstrap", "0"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["import", "jsonl", "--in", str(own), "--out", str(tmp_path / "imported"),
                                 "--split-by-source", "train=1"])
    assert result.exit_code == 0, result.output


def test_an_empty_gold_span_is_refused_by_evaluate_and_select_alike(tmp_path):
    gold = _lines(tmp_path / "gold.jsonl", [_record([]), _record([{"start": 5, "end": 5}], rid="r2", model="b")])
    pred = _lines(tmp_path / "pred.jsonl", [{"id": "r1", "spans": []}, {"id": "r2", "spans": []}])
    with pytest.raises(InputError, match="empty span") as error:
        read_records(gold)
    assert (error.value.path, error.value.line, error.value.field) == (str(gold), 2, "spans[0]")
    runner = CliRunner()
    for args in (["evaluate", "--gold", str(gold), "--pred", str(pred)],
                 ["select", "--gold", str(gold), "--pred", str(pred), "--models", "a,b", "--bootstrap", "0"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert "gold.jsonl:2" in result.output and "empty span" in result.output
        assert "Traceback" not in result.output


def test_an_empty_span_is_refused_by_the_importer_and_for_a_candidate(tmp_path):
    own = _lines(tmp_path / "own.jsonl", [{"context": "c", "response": RESPONSE, "spans": [{"start": 3, "end": 3}]}])
    with pytest.raises(InputError) as error:
        read_own_jsonl(own)
    assert (error.value.line, error.value.field) == (1, "spans[0]")
    with pytest.raises(InputError, match="empty span") as error:
        as_candidate({"response": RESPONSE, "spans": [{"start": 2, "end": 2}]}, 1)
    assert error.value.field == "candidates[1].spans[0]"
    with pytest.raises(InputError, match="empty span"):
        as_candidate({"response": RESPONSE, "spans": [Span(2, 2)]}, 0)


def test_an_empty_predicted_span_is_refused_too(tmp_path):
    gold = _lines(tmp_path / "gold.jsonl", [_record([])])
    pred = _lines(tmp_path / "pred.jsonl", [{"id": "r1", "spans": [{"start": 4, "end": 4}]}])
    result = CliRunner().invoke(app, ["evaluate", "--gold", str(gold), "--pred", str(pred)])
    assert result.exit_code == 2 and "pred.jsonl:1" in result.output and "empty span" in result.output
